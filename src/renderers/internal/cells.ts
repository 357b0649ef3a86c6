// Terminal cells: how many columns a character takes, and which characters must never reach a terminal.

/** Code point ranges that East Asian terminals (and every modern one) draw two columns wide. */
const WIDE: readonly (readonly [number, number])[] = [
  [0x1100, 0x115f], // Hangul Jamo initials
  [0x2e80, 0x303e], // CJK radicals, punctuation
  [0x3041, 0x33ff], // Hiragana, Katakana, CJK compatibility
  [0x3400, 0x4dbf], // CJK extension A
  [0x4e00, 0x9fff], // CJK unified ideographs
  [0xa000, 0xa4cf], // Yi
  [0xac00, 0xd7a3], // Hangul syllables
  [0xf900, 0xfaff], // CJK compatibility ideographs
  [0xfe30, 0xfe4f], // CJK compatibility forms
  [0xff00, 0xff60], // fullwidth forms
  [0xffe0, 0xffe6], // fullwidth signs
  [0x20000, 0x3fffd], // CJK extensions B and later
];

const emojiPresentation = /\p{Emoji_Presentation}/u;
const zeroWidth = /[\p{Mn}\p{Me}\p{Cf}]/u;

/**
 * The columns a code point takes on a terminal: 0 for combining marks and format characters (ZWJ, variation
 * selectors), 2 for wide East Asian characters and emoji, 1 otherwise. An approximation of `wcwidth`: good for
 * tracking where the cursor is, not for typesetting.
 */
export function cellWidth(char: string): 0 | 1 | 2 {
  const code = char.codePointAt(0) ?? 0;
  if (code < 0x300) return 1;
  if (zeroWidth.test(char)) return 0;
  for (const [from, to] of WIDE) if (code >= from && code <= to) return 2;
  return emojiPresentation.test(char) ? 2 : 1;
}

/**
 * Whether a code point is a control character that must not reach a terminal from model text: C0 controls
 * (an escape starts a command sequence, a carriage return overwrites the line), DEL and C1 controls. Newline
 * and tab are handled by the caller.
 */
export function isControl(code: number): boolean {
  return code < 0x20 || (code >= 0x7f && code < 0xa0);
}
