//! What the URL asks the page to be: which widget (`widget=`), whether it is
//! embedded (`embed=1`), and which controls it shows or locks (`controls=`).
//! Query-string routing, so any static host serves every widget from the one
//! `index.html`. The parameter contract is documented in EMBEDDING.md.

use crate::controls::{echo, Control, Drives};
use crate::query::Query;

/// Two steps the bundled model is sure and unsure about (measured: entropy
/// 2.3 bits, 17 tokens make 90 %; 8.5 bits, 371 tokens make 90 %).
pub const CONFIDENT_PROMPT: &str = "[Exit";
pub const LONG_TAILED_PROMPT: &str = "To be, or not to be, that is the";
/// A speaker's name: the beam tree's hypotheses are the speech's first line
/// (measured: they end after 1 to 17 tokens, so the length penalty re-ranks them).
pub const BEAM_PROMPT: &str = "ROMEO.\n";

/// A widget's starting value for one control.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Preset {
    Number(f64),
    Text(&'static str),
}

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
    Quantization,
    PrefillDecode,
    KvCache,
    Batching,
    LogitLens,
    Attention,
    BeamTree,
}

impl Widget {
    pub const ALL: [Widget; 16] = [
        Widget::Temperature,
        Widget::TopK,
        Widget::TopP,
        Widget::MinP,
        Widget::Pipeline,
        Widget::Step,
        Widget::Generate,
        Widget::GreedyLoop,
        Widget::Compare,
        Widget::Quantization,
        Widget::PrefillDecode,
        Widget::KvCache,
        Widget::Batching,
        Widget::LogitLens,
        Widget::Attention,
        Widget::BeamTree,
    ];

    /// The controls each compare column sets for itself (the URL carries
    /// each as a list, one value per column); the others are shared.
    pub const COMPARE_COLUMN_CONTROLS: [Control; 2] = [Control::Temperature, Control::TopK];

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
            Widget::Quantization => "quantization",
            Widget::PrefillDecode => "prefill-decode",
            Widget::KvCache => "kv-cache",
            Widget::Batching => "batching",
            Widget::LogitLens => "logit-lens",
            Widget::Attention => "attention",
            Widget::BeamTree => "beam-tree",
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
            Widget::Quantization => "Smaller weights: what quantization costs",
            Widget::PrefillDecode => "What a token costs: prefill, then decode",
            Widget::KvCache => "The KV cache: why a step does not start over",
            Widget::Batching => "Batching: many readers for the price of a few",
            Widget::LogitLens => "The logit lens: when does the answer form?",
            Widget::Attention => "Attention: where each token looks",
            Widget::BeamTree => "Beam search: every candidate, kept or pruned",
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
            Widget::Quantization => "The loaded model's weights stored six ways, measured here: bytes, speed, how far the next-token distribution moves on a passage the model never saw, and where the text parts.",
            Widget::PrefillDecode => "The prompt goes through the model in one pass (prefill); every new token then takes a pass of its own (decode). Time both on this page's engine: the first token waits for the prefill, the rest come at the decode rate.",
            Widget::KvCache => "Each step needs the keys and values of every earlier token. With the cache they are kept, and a step costs about the same at any length; without it every step recomputes them all. Time both, step by step, on this page's engine, then price the cache of a large model.",
            Widget::Batching => "A decode step reads every weight to make one token. Give it several sequences at once and it reads them once for all: run the same prompt's continuations one after another, then 1, 2, 4 and 8 at a time, and see what the batch buys on this page's engine.",
            Widget::LogitLens => "Stop the model after each block and read its residual stream through the final LayerNorm and the LM head: what would it predict there? Each cell is one position after one block; click one for its top 10.",
            Widget::Attention => "Every head of every layer, read live from the model: row i of a map is where token i looks. Click a head for its map, hover a row to tint the text, and hide the first token to see past the attention sink.",
            Widget::BeamTree => "Beam search keeps the B most likely texts at every step instead of one. Each step ranks the 2·B best extensions of the live beams: the best B go on, the rest are pruned, and an extension ending on an end token finishes a hypothesis. Drag the length penalty to re-rank the finished ones, and compare with a sampled text.",
        }
    }

    /// Whether it needs the model (the others also run on `logits=`).
    pub fn needs_model(self) -> bool {
        matches!(
            self,
            Widget::Step
                | Widget::Generate
                | Widget::GreedyLoop
                | Widget::Compare
                | Widget::Quantization
                | Widget::PrefillDecode
                | Widget::KvCache
                | Widget::Batching
                | Widget::LogitLens
                | Widget::Attention
                | Widget::BeamTree
        )
    }

    /// Its starting values, set before the URL's (which win).
    pub fn presets(self) -> &'static [(Control, Preset)] {
        use Control::*;
        use Preset::*;
        match self {
            Widget::Temperature => &[(Temperature, Number(0.7))],
            Widget::TopK => &[(Temperature, Number(1.0)), (TopK, Number(5.0))],
            Widget::TopP => &[
                (Temperature, Number(1.0)),
                (TopP, Number(0.9)),
                (Prompt, Text(LONG_TAILED_PROMPT)),
            ],
            Widget::MinP => &[(Temperature, Number(1.0)), (MinP, Number(0.1))],
            Widget::Pipeline => &[
                (TopK, Number(50.0)),
                (TopP, Number(0.9)),
                (MinP, Number(0.05)),
                (Bars, Number(12.0)),
            ],
            Widget::Step | Widget::Generate => &[],
            Widget::GreedyLoop => {
                &[(Temperature, Number(0.0)), (MaxTokens, Number(64.0)), (Prompt, Text("ROMEO:"))]
            }
            Widget::Compare => &[(MaxTokens, Number(40.0))],
            Widget::Quantization => &[(MaxTokens, Number(32.0)), (Temperature, Number(0.0))],
            Widget::PrefillDecode => &[(MaxTokens, Number(32.0))],
            Widget::KvCache | Widget::LogitLens => &[],
            Widget::Attention => &[(MaxTokens, Number(16.0))],
            Widget::BeamTree => &[
                (Prompt, Text(BEAM_PROMPT)),
                (MaxTokens, Number(16.0)),
                (EndsAt, Text("line")),
                (TopK, Number(40.0)),
            ],
            Widget::Batching => {
                &[(MaxTokens, Number(24.0)), (Temperature, Number(1.0)), (TopK, Number(40.0))]
            }
        }
    }

    /// The controls shown when the URL does not say. The pipeline shows
    /// every control that shapes the distribution and `generate` every
    /// control but the bars, derived from the table, so a new control
    /// appears there without an edit here.
    pub fn default_controls(self) -> Vec<Control> {
        use Control::*;
        let fixed: &[Control] = match self {
            Widget::Temperature => &[Prompt, Temperature, Bars],
            Widget::TopK => &[Prompt, Temperature, TopK, Bars],
            Widget::TopP => &[Prompt, Temperature, TopP, Bars],
            Widget::MinP => &[Prompt, Temperature, MinP, Bars],
            Widget::Step => &[Prompt, Temperature, TopK, TopP, Seed, Bars],
            Widget::GreedyLoop => &[Prompt, MaxTokens],
            Widget::Compare => &[Prompt, MaxTokens, Seed],
            Widget::Quantization => {
                &[Prompt, Temperature, MaxTokens, Seed, VariantA, VariantB, HeldOutTokens]
            }
            Widget::PrefillDecode => &[Prompt, MaxTokens, PrefillMode],
            Widget::KvCache => {
                &[Prompt, UpTo, KvLayers, KvHeads, HeadSize, KvBytes, Context, Batch]
            }
            Widget::LogitLens => &[Prompt],
            Widget::Batching => &[Prompt, MaxTokens, Temperature, TopK, Seed],
            Widget::Attention => &[Prompt, MaxTokens, FirstToken],
            Widget::BeamTree => &[
                Prompt,
                MaxTokens,
                Beams,
                LengthPenalty,
                PromptInLength,
                EndsAt,
                Temperature,
                TopK,
                Seed,
            ],
            Widget::Pipeline => {
                let shapes =
                    |c: &Control| !matches!(c.spec().drives, Drives::Run(_) | Drives::Stop);
                return Control::playground().filter(shapes).collect();
            }
            Widget::Generate => {
                return Control::playground()
                    .filter(|c| !matches!(c.spec().drives, Drives::View))
                    .collect()
            }
        };
        fixed.to_vec()
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
    /// The playground's controls, all on view.
    pub fn all() -> Shown {
        Shown { controls: Control::playground().map(|c| (c, false)).collect(), from_url: false }
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
                let names: Vec<&str> = Widget::ALL.iter().map(|w| w.name()).collect();
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
