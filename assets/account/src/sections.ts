// The app's sections and the sections' menu that reaches them. The URL's fragment names the section
// (/account?org=…#audit), so a link opens it and Back returns to the previous one; the menu's
// links are plain links to those fragments. A section shows once its panel says it is available
// (its route exists and answers); the keys are always there.

export const SECTIONS = ['keys', 'approvals', 'policy', 'org-keys', 'service-keys', 'audit', 'webhooks'] as const;
export type Section = (typeof SECTIONS)[number];

const isSection = (value: string): value is Section => (SECTIONS as readonly string[]).includes(value);

/** The section a URL fragment names, or null ("#main" of the skip link, or nothing). */
export function sectionOf(hash: string): Section | null {
  const name = hash.replace(/^#/, '');
  return isSection(name) ? name : null;
}

export class Sections {
  private readonly available = new Set<Section>(['keys']);
  /** What the URL asks for; shown once available. */
  private wanted: Section = 'keys';
  private readonly baseTitle: string;

  constructor(
    private readonly root: Document = document,
    private readonly onChange: (section: Section) => void = () => undefined,
  ) {
    this.baseTitle = root.title;
  }

  /** The section on screen. */
  get current(): Section {
    return this.available.has(this.wanted) ? this.wanted : 'keys';
  }

  /** Follows the URL (at start, and on every fragment change); `focus` moves focus to the section's heading. */
  follow(hash: string, { focus = false } = {}): void {
    const named = sectionOf(hash);
    if (named === null && hash !== '' && hash !== '#') return;
    this.wanted = named ?? 'keys';
    this.render();
    if (focus) this.focusHeading();
  }

  setAvailable(section: Section, available: boolean): void {
    if (section === 'keys' || this.available.has(section) === available) return;
    if (available) this.available.add(section);
    else this.available.delete(section);
    this.render();
  }

  /** Only the keys again (sign-out, another org). */
  reset(): void {
    for (const section of SECTIONS) if (section !== 'keys') this.available.delete(section);
    this.render();
  }

  isAvailable(section: Section): boolean {
    return this.available.has(section);
  }

  private render(): void {
    const current = this.current;
    for (const section of SECTIONS) {
      const panel = this.root.querySelector<HTMLElement>(`[data-section-panel="${section}"]`);
      if (panel) panel.hidden = section !== current;
      const link = this.root.querySelector<HTMLAnchorElement>(`a[data-section="${section}"]`);
      if (!link) continue;
      link.hidden = !this.available.has(section);
      if (section === current) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
    const group = this.root.getElementById('org-admin');
    if (group) group.hidden = this.available.size === 1;
    const label = this.root.querySelector(`a[data-section="${current}"] .nav-label`)?.textContent;
    this.root.title = current === 'keys' || !label ? this.baseTitle : `${label} · ${this.baseTitle}`;
    this.onChange(current);
  }

  private focusHeading(): void {
    const panel = this.root.querySelector<HTMLElement>(`[data-section-panel="${this.current}"]`);
    panel?.querySelector<HTMLElement>('[data-section-title]')?.focus();
  }
}
