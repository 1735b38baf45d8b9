//! The values a number control gives a meaning of their own ("0 = off",
//! "1 = greedy"), read from its help line: the one row of the controls table
//! says them once, and the page shows them beside the control (a touch screen
//! never shows a tooltip) and speaks them when the slider sits on one.

use crate::controls::{Input, Spec};

/// A value with a meaning of its own: `value` = `means`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mark {
    pub value: f64,
    pub means: &'static str,
}

/// Where a mark's words end: the help's next clause or aside.
const ENDS: &[char] = &[';', ',', '(', ')'];

/// A control's marks in rising order, read once (a slider's every move
/// looks its value up here).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Marks(Vec<Mark>);

impl Spec {
    /// Its marks in rising order: each "N = words" of the help whose N is a
    /// whole number in the control's range (not "k = after block k"). Empty
    /// for text and choice controls.
    pub fn marks(&self) -> Marks {
        let Input::Number { range, .. } = self.input else { return Marks::default() };
        let help = self.help;
        let mut marks: Vec<Mark> = help
            .match_indices(" = ")
            .filter_map(|(at, sep)| {
                let before = &help[..at];
                let key = &before[before
                    .rfind(|c: char| c.is_whitespace() || "(;:".contains(c))
                    .map_or(0, |i| i + 1)..];
                let value = key.parse::<u32>().ok().map(f64::from)?;
                let rest = &help[at + sep.len()..];
                let means = rest[..rest.find(ENDS).unwrap_or(rest.len())].trim();
                ((range.min..=range.max).contains(&value) && !means.is_empty())
                    .then_some(Mark { value, means })
            })
            .collect();
        marks.sort_by(|a, b| a.value.total_cmp(&b.value));
        Marks(marks)
    }
}

impl Marks {
    /// Each mark, in rising order.
    pub fn iter(&self) -> impl Iterator<Item = &Mark> {
        self.0.iter()
    }

    /// The marks as the page shows them under the label ("0 = off"), or
    /// `None` where there are none.
    pub fn line(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| {
            let each: Vec<String> =
                self.iter().map(|m| format!("{} = {}", m.value, m.means)).collect();
            each.join(", ")
        })
    }

    /// What `value` means, where it is one of the marks.
    pub fn means(&self, value: f64) -> Option<&'static str> {
        self.iter().find(|m| m.value == value).map(|m| m.means)
    }
}

#[cfg(test)]
mod tests {
    use crate::controls::{Control, SPECS};

    fn line(c: Control) -> Option<String> {
        c.spec().marks().line()
    }

    #[test]
    fn each_control_says_what_its_marked_values_mean() {
        assert_eq!(line(Control::TopK).as_deref(), Some("0 = off"));
        assert_eq!(line(Control::TopP).as_deref(), Some("1 = off"));
        assert_eq!(line(Control::Temperature).as_deref(), Some("0 = greedy"));
        assert_eq!(line(Control::Beams).as_deref(), Some("1 = greedy"));
        assert_eq!(line(Control::HeldOutTokens).as_deref(), Some("0 = all of it"));
        // Two marks, written in the help in falling order, shown rising.
        assert_eq!(
            line(Control::KvGroups).as_deref(),
            Some("0 = the model's own heads, 1 = multi-query")
        );
        assert_eq!(line(Control::LengthPenalty).as_deref(), Some("0 = the sum, 1 = per token"));
        // "k = after block k" names no value.
        assert_eq!(line(Control::LensLayer).as_deref(), Some("0 = the embedding"));
        // No marks: a plain range, and text and choice controls.
        assert_eq!(line(Control::Seed), None);
        assert_eq!(line(Control::MaxTokens), None);
        assert_eq!(line(Control::Stop), None);
        assert_eq!(line(Control::Chat), None);
    }

    #[test]
    fn a_value_means_its_mark_and_only_its_own() {
        let top_k = Control::TopK.spec().marks();
        assert_eq!(top_k.means(0.0), Some("off"));
        assert_eq!(top_k.means(1.0), None);
        assert_eq!(Control::RepetitionPenalty.spec().marks().means(1.0), Some("off"));
    }

    #[test]
    fn every_mark_is_a_value_its_control_can_take() {
        for spec in SPECS {
            for mark in spec.marks().iter() {
                let taken = spec.read(&mark.value.to_string()).unwrap();
                assert!(!taken.adjusted, "{}: {} is not one of its values", spec.name, mark.value);
                assert!(!mark.means.contains('='), "{}: {:?}", spec.name, mark.means);
            }
        }
    }
}
