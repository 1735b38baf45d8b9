//! A chat's earlier turns as the `turns` control holds them (in the URL and
//! its text box): one turn per line, user and assistant in turn; `\n` in a
//! line is a newline of the turn and `\\` a backslash, so every text —
//! a reply with newlines or backslashes of its own — comes back as it was.

/// A chat as a run reads it: the system turn (empty: none) and the
/// earlier turns before the prompt.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chat {
    pub system: String,
    pub turns: Vec<String>,
}

impl Chat {
    /// The system turn, `None` where it is empty (the template's own default).
    pub fn system_turn(&self) -> Option<&str> {
        Some(self.system.as_str()).filter(|s| !s.is_empty())
    }
}

/// The turns of `raw` (empty: none).
pub fn turns(raw: &str) -> Vec<String> {
    if raw.is_empty() {
        return Vec::new();
    }
    raw.split('\n').map(|line| unescape(line.trim_end_matches('\r'))).collect()
}

/// `turns` as the control holds them (the inverse of [`turns`]).
pub fn turns_text(turns: &[String]) -> String {
    let line = |t: &String| t.replace('\\', "\\\\").replace('\n', "\\n");
    turns.iter().map(line).collect::<Vec<_>>().join("\n")
}

/// `\n` → newline, `\\` → backslash; any other backslash stays as typed.
fn unescape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (c, chars.clone().next()) {
            ('\\', Some('n')) => out.push('\n'),
            ('\\', Some('\\')) => out.push('\\'),
            _ => {
                out.push(c);
                continue;
            }
        }
        chars.next();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any texts (newlines, backslashes, a literal `\n`, empty turns) come
    /// back from their line form as they were.
    #[test]
    fn turns_come_back_as_they_were() {
        let cases: &[&[&str]] = &[
            &[],
            &["Hi", "Hello!\nHow can I help?"],
            &["a \\n is not a newline", "C:\\dir\\new", "", "\\"],
            &["ends with a backslash\\", "\n\n"],
        ];
        for case in cases {
            let owned: Vec<String> = case.iter().map(|s| s.to_string()).collect();
            let text = turns_text(&owned);
            assert!(owned.is_empty() || text.lines().count() == owned.len(), "{text:?}");
            assert_eq!(turns(&text), owned, "{text:?}");
        }
    }

    /// Typed by hand: a line per turn, a stray backslash kept, Windows line ends read as one.
    #[test]
    fn typed_turns_read_as_meant() {
        assert_eq!(turns("Hi\r\nHello\\nthere\\x"), ["Hi", "Hello\nthere\\x"]);
    }
}
