//! Stop strings matched on the decoded text, across token boundaries: text is
//! released only once it can no longer be the start of a stop string, and the
//! stop string itself is never released.

/// Where the first of `stops` begins in `text` (empty stops never match):
/// the one search the stream, the page's chips and a chat's reply all cut at.
pub fn first_stop(text: &str, stops: &[String]) -> Option<usize> {
    stops.iter().filter(|s| !s.is_empty()).filter_map(|s| text.find(s.as_str())).min()
}

/// Holds back text that might still become a stop string.
#[derive(Debug, Clone, Default)]
pub struct StopMatcher {
    stops: Vec<String>,
    pending: String,
}

/// What [`StopMatcher::push`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// Keep going; this text is final and can be shown.
    No(String),
    /// A stop string was found; this text (before it) is the last to show.
    Yes(String),
}

impl StopMatcher {
    /// A matcher for `stops` (empty strings are ignored).
    pub fn new(stops: &[String]) -> StopMatcher {
        let stops = stops.iter().filter(|s| !s.is_empty()).cloned().collect();
        StopMatcher { stops, pending: String::new() }
    }

    /// Adds newly decoded text.
    pub fn push(&mut self, text: &str) -> Stopped {
        self.pending.push_str(text);
        if let Some(at) = first_stop(&self.pending, &self.stops) {
            let out = self.pending[..at].to_string();
            self.pending.clear();
            return Stopped::Yes(out);
        }
        // Hold the longest tail that is a prefix of some stop string.
        let hold = self
            .stops
            .iter()
            .flat_map(|s| (1..s.len()).filter(|&n| s.is_char_boundary(n)).map(move |n| &s[..n]))
            .filter(|prefix| self.pending.ends_with(prefix))
            .map(str::len)
            .max()
            .unwrap_or(0);
        let cut = self.pending.len() - hold;
        let out = self.pending[..cut].to_string();
        self.pending.drain(..cut);
        Stopped::No(out)
    }

    /// Text still held back when generation ends for another reason.
    pub fn flush(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }
}
