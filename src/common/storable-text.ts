// PostgreSQL text cannot hold U+0000 (the INSERT fails), and an unpaired UTF-16 surrogate is
// silently turned into U+FFFD on the way to UTF-8, so such text would not be stored as given.
// eslint-disable-next-line no-control-regex -- U+0000 is matched on purpose: it is what PostgreSQL cannot store.
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Whether PostgreSQL stores `text` exactly as given: no NUL character, no unpaired surrogate. */
export function isStorableText(text: string): boolean {
  UNSTORABLE.lastIndex = 0;
  return !UNSTORABLE.test(text);
}

/** `text` with every NUL character and unpaired surrogate replaced by U+FFFD, so it can be stored. */
export function toStorableText(text: string): string {
  return text.replace(UNSTORABLE, '\uFFFD');
}
