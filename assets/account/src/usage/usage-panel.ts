// Usage today: plan, meters with warnings at 80 % and 100 %, and 30 days per meter. Refreshed on
// focus, every minute (main.ts) and just after UTC midnight.
import type { UsageReport } from '../../../../packages/client/src/types.js';
import { planName, type PageContext } from '../context.js';
import { byId, clearAlert, h, show, showAlert } from '../dom.js';
import { handledElsewhere, isMissingRoute } from '../errors.js';
import { DAY, exactTime, resetText } from '../time.js';
import { chart, seriesOf, type DailyUsage } from './chart.js';

interface MeterSpec {
  id: 'queries' | 'imports' | 'captures';
  label: string;
  noun: string;
  field: 'mcp_queries' | 'imports' | 'captures';
}

const METERS: readonly MeterSpec[] = [
  { id: 'queries', label: 'Query wallet', noun: 'queries', field: 'mcp_queries' },
  { id: 'imports', label: 'Imports', noun: 'imports', field: 'imports' },
  { id: 'captures', label: 'Captures', noun: 'captures', field: 'captures' },
];

const fmt = (n: number) => n.toLocaleString('en');

export function meter(
  spec: MeterSpec,
  { used, limit }: { used: number; limit: number | null },
  note: string | null,
  daily: DailyUsage[] | null,
): HTMLElement {
  const { id, label } = spec;
  const unlimited = limit === null || limit === undefined;
  const ratio = unlimited || limit === 0 ? 0 : used / limit;
  const level = unlimited ? '' : ratio >= 1 ? 'full' : ratio >= 0.8 ? 'high' : '';
  const warning =
    level === 'full'
      ? `Daily limit reached: more ${spec.noun} are refused until the reset.`
      : level === 'high'
        ? `${Math.floor(ratio * 100)} % of today's limit used.`
        : '';
  const history = daily
    ? chart(
        `${label} per day, last 30 days`,
        seriesOf(daily, (row) => row[spec.field].used),
        id,
      )
    : null;
  return h(
    'div',
    { class: `meter ${level}`, 'data-meter': id },
    h(
      'div',
      { class: 'meter-head' },
      h('span', { id: `meter-${id}-label`, class: 'meter-label', text: label }),
      h('span', {
        class: 'meter-value',
        text: unlimited ? `${fmt(used)} used · Unlimited` : `${fmt(used)} / ${fmt(limit)}`,
      }),
    ),
    unlimited
      ? h('div', { class: 'meter-unlimited', 'aria-hidden': 'true' })
      : h('progress', {
          max: String(Math.max(limit, 1)),
          value: String(Math.min(used, limit)),
          'aria-labelledby': `meter-${id}-label`,
          'aria-valuetext': `${fmt(used)} of ${fmt(limit)} used`,
        }),
    h('p', { class: `meter-warning ${level}`, hidden: !warning, text: warning }),
    note ? h('p', { class: 'hint', text: note }) : null,
    history,
  );
}

export class UsagePanel {
  private usage: UsageReport | null = null;
  private daily: DailyUsage[] | null = null;
  private midnightTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly ctx: PageContext) {}

  async load({ quiet = false } = {}): Promise<void> {
    if (!this.ctx.session.me) return;
    const section = byId('usage');
    if (!quiet) section.setAttribute('aria-busy', 'true');
    const orgId = this.ctx.session.orgId ?? undefined;
    try {
      const [usage, daily] = await Promise.all([
        this.ctx.api.usage.get({ orgId }),
        this.ctx.api.usage.daily({ orgId }).catch((err) => (isMissingRoute(err) ? null : Promise.reject(err))),
      ]);
      clearAlert(byId('usage-error'));
      this.usage = usage;
      this.daily = daily ? daily.days : null;
      this.render();
      this.scheduleMidnight(usage.resets_at);
    } catch (err) {
      if (handledElsewhere(err)) return;
      if (!this.usage) {
        show(byId('usage-body'), false);
        show(byId('usage-plan'), false);
      }
      showAlert(byId('usage-error'), err, () => void this.load());
    } finally {
      show(byId('usage-skeleton'), false);
      section.setAttribute('aria-busy', 'false');
    }
  }

  reset(): void {
    clearTimeout(this.midnightTimer);
    this.usage = null;
    this.daily = null;
    byId('usage-meters').replaceChildren();
    clearAlert(byId('usage-error'));
  }

  private scheduleMidnight(resetsAt: string): void {
    clearTimeout(this.midnightTimer);
    const wait = Date.parse(resetsAt) - Date.now() + 1000;
    if (Number.isFinite(wait) && wait > 0 && wait < 2 * DAY * 1000)
      this.midnightTimer = setTimeout(() => void this.load({ quiet: true }), wait);
  }

  private render(): void {
    const u = this.usage;
    if (!u) return;
    const plan = byId('usage-plan');
    plan.textContent = planName(u.plan);
    plan.dataset.plan = u.plan;
    show(plan, true);
    byId('usage-meters').replaceChildren(
      ...METERS.map((spec) =>
        meter(
          spec,
          u[spec.field],
          spec.id === 'queries' ? `Asks ${fmt(u.breakdown.asks)} · Retrieves ${fmt(u.breakdown.retrieves)}` : null,
          this.daily,
        ),
      ),
    );
    byId('usage-reset').replaceChildren(
      h('time', { datetime: u.resets_at, title: exactTime(u.resets_at), text: resetText(u.resets_at) }),
    );
    show(byId('usage-body'), true);
  }
}
