// One list of the organisation's sections (owners and admins): loaded, rendered, "Load more",
// an error with "Try again" in place, and hidden (section and menu entry) where the deployment
// has no such route or refuses it.
import type { PageContext } from '../context.js';
import { byId, clearAlert, dataTable, h, show, showAlert } from '../dom.js';
import { errorStatus, handledElsewhere, isMissingRoute } from '../errors.js';
import type { Section } from '../sections.js';

export interface AdminListSpec<T extends { next_cursor?: string | null }> {
  section: Section;
  /** Ids of the alert, the list's container and (where it pages) its "Load more" button. */
  error: string;
  list: string;
  more?: string;
  emptyText: () => string;
  fetch: () => Promise<T>;
  /** Rows into the list (`append`: a further page, under the rows already there). */
  render: (data: T, append: boolean) => void;
}

/** The next page's cursor (null: no more); false when the section is not available; undefined after a 401. */
export async function loadAdminList<T extends { next_cursor?: string | null }>(
  ctx: PageContext,
  spec: AdminListSpec<T>,
  append = false,
): Promise<string | null | false | undefined> {
  clearAlert(byId(spec.error));
  try {
    const data = await spec.fetch();
    spec.render(data, append);
    const list = byId(spec.list);
    if (list.childElementCount === 0) list.replaceChildren(h('p', { class: 'empty muted', text: spec.emptyText() }));
    if (spec.more) show(byId(spec.more), Boolean(data.next_cursor));
    ctx.sections.setAvailable(spec.section, true);
    return data.next_cursor ?? null;
  } catch (err) {
    if (handledElsewhere(err)) return undefined;
    if (isMissingRoute(err) || errorStatus(err) === 403) {
      ctx.sections.setAvailable(spec.section, false);
      return false;
    }
    ctx.sections.setAvailable(spec.section, true);
    showAlert(byId(spec.error), err, () => void loadAdminList(ctx, spec, append));
    return null;
  }
}

/** A table into the list: a fresh one, or (append) its rows under the table already there. */
export function putRows(
  listId: string,
  append: boolean,
  rows: HTMLElement[],
  table: (rows: HTMLElement[]) => HTMLTableElement,
): void {
  const list = byId(listId);
  const body = append ? list.querySelector('tbody') : null;
  if (body) body.append(...rows);
  else list.replaceChildren(...(rows.length ? [table(rows)] : []));
}

/** A visually hidden column header (the actions column). */
export const hiddenHeader = (text: string) => h('span', { class: 'visually-hidden', text });

/** A cursor-paged list: the first page on load, the next on "Load more". */
export class PagedList<T extends { next_cursor?: string | null }> {
  private cursor: string | null = null;

  constructor(
    private readonly ctx: PageContext,
    private readonly spec: (cursor: string | undefined, append: boolean) => AdminListSpec<T>,
  ) {
    const more = spec(undefined, false).more;
    if (more) byId(more).addEventListener('click', () => void this.load({ more: true }));
  }

  /** True when the section is available. */
  async load({ more = false } = {}): Promise<boolean> {
    const cursor = more && this.cursor ? this.cursor : undefined;
    const next = await loadAdminList(this.ctx, this.spec(cursor, more), more);
    if (next !== false && next !== undefined) this.cursor = next;
    return next !== false;
  }
}

/**
 * A cursor-paged table of one of the organisation's sections, whose alert, list and "Load more"
 * are the elements `<section>-error`, `<section>-list` and `<section>-more`.
 */
export function pagedTable<T extends { next_cursor?: string | null }>(
  ctx: PageContext,
  table: {
    section: Section;
    emptyText: () => string;
    fetch: (cursor: string | undefined) => Promise<T>;
    rows: (data: T) => HTMLElement[];
    caption: string;
    headers: Array<string | Node>;
  },
): PagedList<T> {
  const list = `${table.section}-list`;
  return new PagedList<T>(ctx, (cursor, append) => ({
    section: table.section,
    error: `${table.section}-error`,
    list,
    more: `${table.section}-more`,
    emptyText: table.emptyText,
    fetch: () => table.fetch(cursor),
    render: (data) => putRows(list, append, table.rows(data), (rows) => dataTable(table.caption, table.headers, rows)),
  }));
}
