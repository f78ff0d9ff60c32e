import { describe, expect, it } from 'vitest';
import { meter } from './usage-panel.js';

const spec = { id: 'imports', label: 'Imports', noun: 'imports', field: 'imports' } as const;

describe('a usage meter', () => {
  it('warns at 80 % and at 100 % of the daily limit, and says unlimited where there is none', () => {
    const calm = meter(spec, { used: 7, limit: 10 }, null, null);
    expect(calm.className).toBe('meter ');
    expect(calm.querySelector<HTMLElement>('.meter-warning')!.hidden).toBe(true);
    const high = meter(spec, { used: 8, limit: 10 }, null, null);
    expect(high.classList.contains('high')).toBe(true);
    expect(high.querySelector('.meter-warning')!.textContent).toBe("80 % of today's limit used.");
    const full = meter(spec, { used: 10, limit: 10 }, null, null);
    expect(full.querySelector('.meter-warning')!.textContent).toBe(
      'Daily limit reached: more imports are refused until the reset.',
    );
    expect(full.querySelector('progress')!.getAttribute('aria-valuetext')).toBe('10 of 10 used');
    const unlimited = meter(spec, { used: 1234, limit: null }, null, null);
    expect(unlimited.querySelector('.meter-value')!.textContent).toBe('1,234 used · Unlimited');
    expect(unlimited.querySelector('progress')).toBeNull();
  });
});
