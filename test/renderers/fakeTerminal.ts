// A fake terminal for the renderer tests: it interprets what a renderer writes the way an xterm-compatible
// terminal does, so that a test checks what is on the screen, not the escape codes.
//
// It knows printable characters (with the terminal's automatic wrapping and its "pending wrap" state after
// the last column), CR, LF (LF only moves down, as on a raw terminal), and the few CSI sequences a renderer
// needs: cursor up (A), cursor to column (G), erase below (J), erase to end of line (K), and graphic
// rendition (m), which it ignores. Anything else throws: a renderer must not send what the test cannot read,
// and model text must not reach the terminal as control characters.

/** Columns a character takes. Independent of the renderer's own table: CJK ideographs and emoji are wide. */
function widthOf(char: string): 0 | 1 | 2 {
  const code = char.codePointAt(0) ?? 0;
  if (code >= 0x300 && code <= 0x36f) return 0;
  if ((code >= 0x4e00 && code <= 0x9fff) || (code >= 0x1f300 && code <= 0x1faff)) return 2;
  return 1;
}

export class FakeTerminal {
  /** Every row written so far (the scrollback and the screen); a cell is a character, '' after a wide one. */
  private rows: string[][] = [[]];
  private row = 0;
  private col = 0;
  /** The last column was just written: the next printable character goes to the next row. */
  private pendingWrap = false;

  constructor(readonly columns: number) {}

  /** Interprets `data`. */
  write(data: string): void {
    const chars = [...data];
    for (let i = 0; i < chars.length; i++) {
      const char = chars[i] as string;
      if (char === '\x1b') {
        i = this.escape(chars, i);
        continue;
      }
      if (char === '\r') {
        this.col = 0;
        this.pendingWrap = false;
        continue;
      }
      if (char === '\n') {
        this.down();
        this.pendingWrap = false;
        continue;
      }
      const code = char.codePointAt(0) ?? 0;
      if (code < 0x20 || (code >= 0x7f && code < 0xa0))
        throw new Error(`unexpected control character U+${code.toString(16).padStart(4, '0')}`);
      this.print(char);
    }
  }

  /** The rows as text, trailing blanks trimmed, trailing empty rows dropped. */
  get screen(): string[] {
    const lines = this.rows.map((cells) => cells.join('').trimEnd());
    while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    return lines;
  }

  /** The cursor: row and column. */
  get cursor(): { row: number; col: number } {
    return { row: this.row, col: this.col };
  }

  private print(char: string): void {
    const width = widthOf(char);
    const cells = this.cells();
    if (width === 0) {
      const previous = Math.max(0, this.col - 1);
      cells[previous] = (cells[previous] ?? ' ') + char;
      return;
    }
    if (this.pendingWrap || this.col + width > this.columns) {
      this.down();
      this.col = 0;
      this.pendingWrap = false;
    }
    const row = this.cells();
    while (row.length < this.col) row.push(' ');
    row[this.col] = char;
    if (width === 2) row[this.col + 1] = '';
    if (this.col + width >= this.columns) {
      this.col = this.columns - 1;
      this.pendingWrap = true;
    } else {
      this.col += width;
    }
  }

  private down(): void {
    this.row++;
    while (this.rows.length <= this.row) this.rows.push([]);
  }

  private cells(): string[] {
    return this.rows[this.row] as string[];
  }

  /** Interprets the escape sequence at `start`; returns the index of its last character. */
  private escape(chars: string[], start: number): number {
    if (chars[start + 1] !== '[')
      throw new Error(`unsupported escape: ${JSON.stringify(chars.slice(start, start + 4).join(''))}`);
    let end = start + 2;
    let params = '';
    while (end < chars.length && /[0-9;]/.test(chars[end] as string)) params += chars[end++];
    const final = chars[end];
    const n = params === '' ? undefined : Number(params);
    switch (final) {
      case 'A':
        this.row = Math.max(0, this.row - (n ?? 1));
        this.pendingWrap = false;
        break;
      case 'G':
        this.col = Math.min(this.columns - 1, Math.max(0, (n ?? 1) - 1));
        this.pendingWrap = false;
        break;
      case 'J':
        if (n !== undefined && n !== 0) throw new Error(`unsupported erase: CSI ${params} J`);
        this.cells().splice(this.col);
        this.rows.splice(this.row + 1);
        break;
      case 'K':
        if (n !== undefined && n !== 0) throw new Error(`unsupported erase: CSI ${params} K`);
        this.cells().splice(this.col);
        break;
      case 'm':
        break;
      default:
        throw new Error(`unsupported sequence: CSI ${params} ${final ?? '(end of data)'}`);
    }
    return end;
  }
}
