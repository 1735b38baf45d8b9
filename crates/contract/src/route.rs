//! What the URL asks the page to be: which widget (`widget=`), whether it is
//! embedded (`embed=1`), and which controls it shows or locks (`controls=`).
//! Query-string routing, so any static host serves every widget from the one
//! `index.html`. The parameter contract is documented in EMBEDDING.md.

use crate::controls::{echo, Control, Drives};
use crate::query::Query;
use crate::widgets::Widget;

/// Which controls are on view, and which of those are read-only.
#[derive(Clone, Debug, PartialEq)]
pub struct Shown {
    /// (control, locked) in the page's order.
    pub controls: Vec<(Control, bool)>,
    /// Whether `controls=` came from the URL (then links carry it on).
    pub from_url: bool,
}

impl Shown {
    /// The playground's controls, all on view.
    pub fn all() -> Shown {
        Shown { controls: Control::playground().map(|c| (c, false)).collect(), from_url: false }
    }

    /// What a model shows: the chat controls only where it has a chat
    /// template (`chat`) — on GPT-2 they would do nothing.
    pub fn for_model(&self, chat: bool) -> Shown {
        let keep = |c: &Control| chat || !matches!(c.spec().drives, Drives::Chat);
        let controls = self.controls.iter().copied().filter(|(c, _)| keep(c)).collect();
        Shown { controls, from_url: self.from_url }
    }

    /// `None`: hidden; `Some(locked)`: on view.
    pub fn get(&self, control: Control) -> Option<bool> {
        self.controls.iter().find(|(c, _)| *c == control).map(|&(_, locked)| locked)
    }

    /// Parses `temperature,top_p:locked` (or `none`); unknown names are
    /// skipped with a notice.
    pub fn parse(raw: &str, notices: &mut Vec<String>) -> Shown {
        let mut controls = Vec::new();
        for item in raw.split(',').map(str::trim).filter(|s| !s.is_empty() && *s != "none") {
            let (name, locked) = match item.strip_suffix(":locked") {
                Some(name) => (name, true),
                None => (item, false),
            };
            match Control::from_name(name) {
                // How the engine opens is chosen in the link or the Model menu.
                Some(c) if matches!(c.spec().drives, Drives::Engine) => notices.push(format!(
                    "controls: {} is chosen in the link or the Model menu, not among the controls",
                    c.spec().name
                )),
                Some(c) if !controls.iter().any(|&(d, _)| d == c) => controls.push((c, locked)),
                Some(_) => {}
                None => notices.push(format!("controls: no control called {}", echo(name))),
            }
        }
        // Shown in the page's order, whatever the URL's order.
        controls.sort_by_key(|&(c, _)| c as usize);
        Shown { controls, from_url: true }
    }

    /// The `controls=` value that reproduces this.
    pub fn to_param(&self) -> String {
        if self.controls.is_empty() {
            return "none".into();
        }
        let names = self.controls.iter().map(|&(c, locked)| {
            if locked {
                format!("{}:locked", c.spec().name)
            } else {
                c.spec().name.to_string()
            }
        });
        names.collect::<Vec<_>>().join(",")
    }
}

/// The page the URL asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    /// `None`: the full playground.
    pub widget: Option<Widget>,
    pub embed: bool,
    pub shown: Shown,
}

/// A yes/no parameter: `1`/`true`/`yes` or `0`/`false`/`no`/empty/absent;
/// anything else is no, with a notice ending in `otherwise`.
pub(crate) fn flag(query: &Query, name: &str, notices: &mut Vec<String>, otherwise: &str) -> bool {
    match query.get(name).map(str::trim) {
        None | Some("0" | "false" | "no" | "") => false,
        Some("1" | "true" | "yes") => true,
        Some(other) => {
            notices.push(format!("{name}: {} is not 1 or 0; {otherwise}", echo(other)));
            false
        }
    }
}

impl Route {
    /// Reads `widget`, `embed` and `controls`, adding a notice for anything
    /// that could not be taken.
    pub fn from_query(query: &Query, notices: &mut Vec<String>) -> Route {
        let widget = query.get("widget").and_then(|name| {
            let w = Widget::from_name(name);
            if w.is_none() && !name.trim().is_empty() {
                let names: Vec<&str> = Widget::all().map(|w| w.name()).collect();
                notices.push(format!(
                    "widget: no widget called {} (there are: {}); showing the playground",
                    echo(name),
                    names.join(", ")
                ));
            }
            w
        });
        let embed = flag(query, "embed", notices, "showing the full page");
        let shown = match query.get("controls") {
            Some(raw) => Shown::parse(raw, notices),
            None => match widget {
                Some(w) => Shown {
                    controls: w.default_controls().iter().map(|&c| (c, false)).collect(),
                    from_url: false,
                },
                None => Shown::all(),
            },
        };
        Route { widget, embed, shown }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The playground shows chat, its system turn and its earlier turns
    /// only on a model with a chat template; what the URL locked stays locked.
    #[test]
    fn chat_controls_show_only_on_a_chat_model() {
        let all = Shown::all();
        assert_eq!(all.get(Control::Chat), Some(false));
        assert_eq!(all.get(Control::System), Some(false));
        let gpt2 = all.for_model(false);
        let chat = [Control::Chat, Control::System, Control::Turns];
        assert_eq!(chat.map(|c| gpt2.get(c)), [None; 3]);
        assert_eq!(gpt2.controls.len(), all.controls.len() - chat.len());
        let locked = Shown::parse("chat:locked,system,top_k", &mut Vec::new());
        assert_eq!(locked.for_model(true), locked);
        assert_eq!(locked.for_model(false).controls, [(Control::TopK, false)]);
    }
}
