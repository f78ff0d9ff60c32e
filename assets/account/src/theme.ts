// Light and dark: the system's unless the toggle chose one (kept in localStorage; nothing secret).
import { announce, byId } from './dom.js';

const THEME_KEY = 'svc_theme';

function currentTheme(): 'dark' | 'light' {
  const chosen = document.documentElement.dataset.theme;
  if (chosen === 'dark' || chosen === 'light') return chosen;
  return window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

function applyTheme(theme: string | undefined | null): void {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
  byId('theme-toggle').setAttribute('aria-pressed', String(currentTheme() === 'dark'));
}

function toggleTheme(): void {
  const next = currentTheme() === 'dark' ? 'light' : 'dark';
  try {
    localStorage.setItem(THEME_KEY, next);
  } catch {
    // Storage may be off; the choice then lasts for this page only.
  }
  applyTheme(next);
  announce(next === 'dark' ? 'Dark theme on.' : 'Light theme on.');
}

export function initTheme(): void {
  let theme: string | null = null;
  try {
    theme = localStorage.getItem(THEME_KEY);
  } catch {
    theme = null;
  }
  applyTheme(theme === 'dark' || theme === 'light' ? theme : null);
  window
    .matchMedia('(prefers-color-scheme: dark)')
    .addEventListener('change', () => applyTheme(document.documentElement.dataset.theme));
  byId('theme-toggle').addEventListener('click', toggleTheme);
}
