//! What the URL asks the page to be: which widget (`widget=`), whether it is
//! embedded (`embed=1`), and which controls it shows or locks (`controls=`).
//! Query-string routing, so any static host serves every widget from the one
//! `index.html`. The parameter contract is documented in EMBEDDING.md.

use crate::url_state::query;

/// The widget catalogue, in lesson order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Widget {
    Temperature,
    TopK,
    TopP,
    MinP,
    Pipeline,
    Step,
    Generate,
    GreedyLoop,
    Compare,
}

impl Widget {
    pub const ALL: [Widget; 9] = [
        Widget::Temperature,
        Widget::TopK,
        Widget::TopP,
        Widget::MinP,
        Widget::Pipeline,
        Widget::Step,
        Widget::Generate,
        Widget::GreedyLoop,
        Widget::Compare,
    ];

    /// The `widget=` value.
    pub fn name(self) -> &'static str {
        match self {
            Widget::Temperature => "temperature",
            Widget::TopK => "top-k",
            Widget::TopP => "top-p",
            Widget::MinP => "min-p",
            Widget::Pipeline => "pipeline",
            Widget::Step => "step",
            Widget::Generate => "generate",
            Widget::GreedyLoop => "greedy-loop",
            Widget::Compare => "compare",
        }
    }

    pub fn from_name(name: &str) -> Option<Widget> {
        Widget::ALL.into_iter().find(|w| w.name() == name.trim())
    }

    /// The heading a reader sees.
    pub fn title(self) -> &'static str {
        match self {
            Widget::Temperature => "Temperature",
            Widget::TopK => "Top-k",
            Widget::TopP => "Top-p (nucleus)",
            Widget::MinP => "Min-p",
            Widget::Pipeline => "The sampling pipeline, stage by stage",
            Widget::Step => "One step at a time",
            Widget::Generate => "Generation with a seed",
            Widget::GreedyLoop => "Greedy decoding loops",
            Widget::Compare => "One prompt, four ways",
        }
    }

    /// One sentence on what to try.
    pub fn lesson(self) -> &'static str {
        match self {
            Widget::Temperature => "Drag the temperature: below 1 the likely tokens take more of the mass, above 1 the tail gets more. The pale bars are T = 1.",
            Widget::TopK => "Keep only the k most likely tokens and renormalise; struck-through tokens can no longer be drawn.",
            Widget::TopP => "Keep the smallest set of tokens whose probabilities add up to p. Drag the line; switch between a confident and a long-tailed step.",
            Widget::MinP => "Keep the tokens at least min-p times as likely as the most likely one: the cut follows the model's confidence.",
            Widget::Pipeline => "Processors → temperature → top-k → top-p → min-p: the same tokens after every stage, in order.",
            Widget::Step => "Predict → choose → append → repeat: click a bar to choose the next token yourself, or let the sampler draw.",
            Widget::Generate => "Streaming generation. Run it twice with the same seed: the text is the same, token for token.",
            Widget::GreedyLoop => "Always taking the most likely token often falls into a loop. Switch to sampling to break it.",
            Widget::Compare => "The same prompt and seed decoded four ways: greedy, low temperature, medium temperature with a small k, higher temperature with a larger k.",
        }
    }

    /// Whether it needs the model (the others also run on `logits=`).
    pub fn needs_model(self) -> bool {
        matches!(self, Widget::Step | Widget::Generate | Widget::GreedyLoop | Widget::Compare)
    }

    /// The controls shown when the URL does not say.
    pub fn default_controls(self) -> &'static [Control] {
        use Control::*;
        match self {
            Widget::Temperature => &[Prompt, Temperature, Bars],
            Widget::TopK => &[Prompt, Temperature, TopK, Bars],
            Widget::TopP => &[Prompt, Temperature, TopP, Bars],
            Widget::MinP => &[Prompt, Temperature, MinP, Bars],
            Widget::Pipeline => &[Prompt, Temperature, TopK, TopP, MinP, RepetitionPenalty, Bars],
            Widget::Step => &[Prompt, Temperature, TopK, TopP, Seed, Bars],
            Widget::Generate => {
                &[Prompt, Temperature, TopK, TopP, MinP, RepetitionPenalty, MaxTokens, Seed]
            }
            Widget::GreedyLoop => &[Prompt, MaxTokens],
            Widget::Compare => &[Prompt, MaxTokens, Seed],
        }
    }
}

/// A control a URL can show, lock or hide (`controls=` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Prompt,
    Temperature,
    TopK,
    TopP,
    MinP,
    RepetitionPenalty,
    MaxTokens,
    Seed,
    Bars,
    Stop,
}

impl Control {
    pub const ALL: [Control; 10] = [
        Control::Prompt,
        Control::Temperature,
        Control::TopK,
        Control::TopP,
        Control::MinP,
        Control::RepetitionPenalty,
        Control::MaxTokens,
        Control::Seed,
        Control::Bars,
        Control::Stop,
    ];

    /// Its URL name (the same as its value's parameter).
    pub fn name(self) -> &'static str {
        match self {
            Control::Prompt => "prompt",
            Control::Temperature => "temperature",
            Control::TopK => "top_k",
            Control::TopP => "top_p",
            Control::MinP => "min_p",
            Control::RepetitionPenalty => "repetition_penalty",
            Control::MaxTokens => "max_tokens",
            Control::Seed => "seed",
            Control::Bars => "bars",
            Control::Stop => "stop",
        }
    }
}

/// Which controls are on view, and which of those are read-only.
#[derive(Clone, Debug, PartialEq)]
pub struct Shown {
    /// (control, locked) in the page's order.
    pub controls: Vec<(Control, bool)>,
    /// Whether `controls=` came from the URL (then links carry it on).
    pub from_url: bool,
}

impl Shown {
    pub fn all() -> Shown {
        Shown { controls: Control::ALL.iter().map(|&c| (c, false)).collect(), from_url: false }
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
            match Control::ALL.iter().find(|c| c.name() == name) {
                Some(&c) if !controls.iter().any(|&(d, _)| d == c) => controls.push((c, locked)),
                Some(_) => {}
                None => notices.push(format!("controls: no control called “{name}”")),
            }
        }
        // Shown in the page's order, whatever the URL's order.
        controls.sort_by_key(|(c, _)| Control::ALL.iter().position(|d| d == c));
        Shown { controls, from_url: true }
    }

    /// The `controls=` value that reproduces this.
    pub fn to_param(&self) -> String {
        if self.controls.is_empty() {
            return "none".into();
        }
        let names = self.controls.iter().map(|&(c, locked)| {
            if locked {
                format!("{}:locked", c.name())
            } else {
                c.name().to_string()
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

impl Route {
    /// Reads `widget`, `embed` and `controls`, adding a notice for anything
    /// that could not be taken.
    pub fn from_url(notices: &mut Vec<String>) -> Route {
        let widget = query("widget").and_then(|name| {
            let w = Widget::from_name(&name);
            if w.is_none() && !name.trim().is_empty() {
                let names: Vec<&str> = Widget::ALL.iter().map(|w| w.name()).collect();
                notices.push(format!(
                    "widget: no widget called “{name}” (there are: {}); showing the playground",
                    names.join(", ")
                ));
            }
            w
        });
        let embed = matches!(query("embed").as_deref().map(str::trim), Some("1" | "true" | "yes"));
        let shown = match query("controls") {
            Some(raw) => Shown::parse(&raw, notices),
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
