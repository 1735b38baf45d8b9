//! The `Split` pre-tokenizer patterns of Llama 3 and Qwen2, written as code
//! the way `bpe::pretokenize` writes GPT-2's: a tokenizer.json names its
//! pattern as a regex string, and only these two strings are read (any other
//! is refused by name). They differ in how many digits a number piece takes.
//!
//! `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}`
//! `| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+` (Llama 3;
//! Qwen2: `\p{N}` for `\p{N}{1,3}`), alternatives tried in order at each
//! position, each quantifier greedy, backtracking where the regex would.

use super::char_class::{class, Class};

/// Llama 3's pattern as its tokenizer.json spells it.
pub const LLAMA3: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Qwen2's pattern as its tokenizer.json spells it.
pub const QWEN2: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// A `Split` pattern the engine runs, by the digits a number piece takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitPattern {
    pub max_digits: usize,
}

impl SplitPattern {
    /// The pattern a tokenizer.json's regex string names, if it is one of ours.
    pub fn from_regex(regex: &str) -> Option<SplitPattern> {
        match regex {
            LLAMA3 => Some(SplitPattern { max_digits: 3 }),
            QWEN2 => Some(SplitPattern { max_digits: 1 }),
            _ => None,
        }
    }

    /// `text` in the pattern's pieces (`Isolated`: every character in one).
    pub fn split(self, text: &str) -> Vec<&str> {
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let byte_at = |i: usize| chars.get(i).map_or(text.len(), |&(b, _)| b);
        let cs: Vec<char> = chars.iter().map(|&(_, c)| c).collect();
        let mut pieces = Vec::new();
        let mut i = 0;
        while i < cs.len() {
            let end = self.piece_end(&cs, i);
            pieces.push(&text[byte_at(i)..byte_at(end)]);
            i = end;
        }
        pieces
    }

    /// Where the piece starting at char `i` ends (exclusive).
    fn piece_end(self, cs: &[char], i: usize) -> usize {
        let n = cs.len();
        let run = |from: usize, keep: &dyn Fn(char) -> bool| {
            (from..n).find(|&j| !keep(cs[j])).unwrap_or(n)
        };
        let letter = |c: char| class(c) == Class::Letter;
        let number = |c: char| class(c) == Class::Number;
        let space = |c: char| class(c) == Class::Space;
        let newline = |c: char| c == '\r' || c == '\n';
        let c = cs[i];
        if let Some(end) = contraction(cs, i) {
            return end;
        }
        // `[^\r\n\p{L}\p{N}]?\p{L}+`
        if letter(c) {
            return run(i, &letter);
        }
        if !newline(c) && !number(c) && cs.get(i + 1).is_some_and(|&d| letter(d)) {
            return run(i + 1, &letter);
        }
        // `\p{N}{1,max}`
        if number(c) {
            return run(i, &number).min(i + self.max_digits);
        }
        // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
        let other = |c: char| !space(c) && !letter(c) && !number(c);
        let k = if c == ' ' { i + 1 } else { i };
        if cs.get(k).is_some_and(|&d| other(d)) {
            return run(run(k, &other), &newline);
        }
        // Whitespace from here: `\s*[\r\n]+` ends after the run's last newline.
        let end = run(i, &space);
        if let Some(last) = (i..end).rev().find(|&j| newline(cs[j])) {
            return last + 1;
        }
        // `\s+(?!\S)` leaves a run's last space to what follows; `\s+` takes a lone one.
        match end < n && end - i > 1 {
            true => end - 1,
            false => end,
        }
    }
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at char `i`: where it ends.
fn contraction(cs: &[char], i: usize) -> Option<usize> {
    const ENDINGS: [&str; 7] = ["s", "t", "re", "ve", "m", "ll", "d"];
    if cs[i] != '\'' {
        return None;
    }
    ENDINGS.iter().find_map(|e| {
        let len = e.len();
        let tail = cs.get(i + 1..i + 1 + len)?;
        tail.iter().zip(e.chars()).all(|(a, b)| a.eq_ignore_ascii_case(&b)).then_some(i + 1 + len)
    })
}
