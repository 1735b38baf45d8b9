//! The widget catalogue, one row per widget in lesson order ([`WIDGETS`]):
//! its `widget=` name, title, the sentence on what to try, whether it needs
//! the model, its presets and the controls it shows when the URL does not
//! say. The router, the page's index, the embed code, `decode-lab widgets`
//! (which the e2e tests read their widget lists from) and the check that
//! EMBEDDING.md documents every widget all iterate the table; the page's
//! view of each widget is the one exhaustive match in `src/widgets/mod.rs`.

use crate::controls::{Control, Drives};

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

/// The controls a widget shows when the URL does not say.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shows {
    These(&'static [Control]),
    /// Every playground control that shapes the distribution (derived from
    /// the control table, so a new control appears without an edit here).
    Shaping,
    /// Every playground control but the view's.
    Running,
}

/// What a learner does first on a widget (the accessibility audit looks at
/// the widget again after it, in the state the action leaves).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    /// Moves a control to this value (the view redraws; no model runs).
    Set(Control, f64),
    /// Presses a button, by its `data-testid`, after typing `fill`'s text
    /// into the field of that `data-testid` where there is one.
    Press { button: &'static str, fill: Option<(&'static str, &'static str)> },
}

/// One widget: its row in the table.
#[derive(Debug)]
pub struct WidgetSpec {
    pub widget: Widget,
    /// The `widget=` value.
    pub name: &'static str,
    /// Its heading.
    pub title: &'static str,
    /// One sentence on what to try.
    pub lesson: &'static str,
    /// Whether it needs the model (the others also run on `logits=`).
    pub needs_model: bool,
    /// Its starting values, set before the URL's (which win).
    pub presets: &'static [(Control, Preset)],
    pub shows: Shows,
    /// Its main action.
    pub action: Action,
}

macro_rules! widgets {
    ($($widget:ident: $name:literal, $title:literal, model: $model:literal,
        presets: [$($preset:expr),*], shows: $shows:expr, action: $action:expr,
        lesson: $lesson:literal;)*) => {
        /// A widget, named by type; its row is [`Widget::spec`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Widget { $($widget),* }

        /// Every widget, in lesson order.
        pub const WIDGETS: &[WidgetSpec] = {
            use Action::*;
            use Control::*;
            use Preset::*;
            use Shows::*;
            &[$(WidgetSpec {
                widget: Widget::$widget, name: $name, title: $title, lesson: $lesson,
                needs_model: $model, presets: &[$($preset),*], shows: $shows, action: $action,
            }),*]
        };
    };
}

widgets! {
    Temperature: "temperature", "Temperature",
        model: false,
        presets: [(Temperature, Number(0.7))],
        shows: These(&[Prompt, Temperature, Bars]),
        action: Set(Temperature, 1.4),
        lesson: "Drag the temperature: below 1 the likely tokens take more of the mass, above 1 the tail gets more. The pale bars are T = 1.";
    TopK: "top-k", "Top-k",
        model: false,
        presets: [(Temperature, Number(1.0)), (TopK, Number(5.0))],
        shows: These(&[Prompt, Temperature, TopK, Bars]),
        action: Set(TopK, 2.0),
        lesson: "Keep only the k most likely tokens and renormalise; struck-through tokens can no longer be drawn.";
    TopP: "top-p", "Top-p (nucleus)",
        model: false,
        presets: [(Temperature, Number(1.0)), (TopP, Number(0.9)), (Prompt, Text(LONG_TAILED_PROMPT))],
        shows: These(&[Prompt, Temperature, TopP, Bars]),
        action: Press { button: "switch-step", fill: None },
        lesson: "Keep the smallest set of tokens whose probabilities add up to p. Drag the line; switch between a confident and a long-tailed step.";
    MinP: "min-p", "Min-p",
        model: false,
        presets: [(Temperature, Number(1.0)), (MinP, Number(0.1))],
        shows: These(&[Prompt, Temperature, MinP, Bars]),
        action: Set(MinP, 0.3),
        lesson: "Keep the tokens at least min-p times as likely as the most likely one: the cut follows the model's confidence.";
    Pipeline: "pipeline", "The sampling pipeline, stage by stage",
        model: false,
        presets: [(TopK, Number(50.0)), (TopP, Number(0.9)), (MinP, Number(0.05)), (Bars, Number(12.0))],
        shows: Shaping,
        action: Set(Temperature, 1.4),
        lesson: "Processors → temperature → top-k → top-p → min-p: the same tokens after every stage, in order.";
    Step: "step", "One step at a time",
        model: true,
        presets: [],
        shows: These(&[Prompt, Temperature, TopK, TopP, Seed, Bars]),
        action: Press { button: "step", fill: None },
        lesson: "Predict → choose → append → repeat: click a bar to choose the next token yourself, or let the sampler draw.";
    Generate: "generate", "Generation with a seed",
        model: true,
        presets: [],
        shows: Running,
        action: Press { button: "generate", fill: None },
        lesson: "Streaming generation. Run it twice with the same seed: the text is the same, token for token.";
    GreedyLoop: "greedy-loop", "Greedy decoding loops",
        model: true,
        presets: [(Temperature, Number(0.0)), (MaxTokens, Number(64.0)), (Prompt, Text("ROMEO:"))],
        shows: These(&[Prompt, MaxTokens]),
        action: Press { button: "greedy", fill: None },
        lesson: "Always taking the most likely token often falls into a loop. Switch to sampling to break it.";
    Compare: "compare", "One prompt, four ways",
        model: true,
        presets: [(MaxTokens, Number(40.0))],
        shows: These(&[Prompt, MaxTokens, Seed]),
        action: Press { button: "generate", fill: None },
        lesson: "The same prompt and seed decoded four ways: greedy, low temperature, medium temperature with a small k, higher temperature with a larger k.";
    Quantization: "quantization", "Smaller weights: what quantization costs",
        model: true,
        presets: [(MaxTokens, Number(32.0)), (Temperature, Number(0.0))],
        shows: These(&[Prompt, Temperature, MaxTokens, Seed, VariantA, VariantB, HeldOutTokens]),
        action: Press { button: "measure", fill: None },
        lesson: "The loaded model's weights stored six ways, measured here: bytes, speed, how far the next-token distribution moves on a passage the model never saw, and where the text parts.";
    PrefillDecode: "prefill-decode", "What a token costs: prefill, then decode",
        model: true,
        presets: [(MaxTokens, Number(32.0))],
        shows: These(&[Prompt, MaxTokens, PrefillMode]),
        action: Press { button: "time-generation", fill: None },
        lesson: "The prompt goes through the model in one pass (prefill); every new token then takes a pass of its own (decode). Time both on this page's engine: the first token waits for the prefill, the rest come at the decode rate.";
    KvCache: "kv-cache", "The KV cache: why a step does not start over",
        model: true,
        presets: [],
        shows: These(&[Prompt, UpTo, KvLayers, KvHeads, HeadSize, KvBytes, Context, Batch]),
        action: Press { button: "measure-kv", fill: None },
        lesson: "Each step needs the keys and values of every earlier token. With the cache they are kept, and a step costs about the same at any length; without it every step recomputes them all. Time both, step by step, on this page's engine, then price the cache of a large model.";
    Batching: "batching", "Batching: many readers for the price of a few",
        model: true,
        presets: [(MaxTokens, Number(24.0)), (Temperature, Number(1.0)), (TopK, Number(40.0))],
        shows: These(&[Prompt, MaxTokens, Temperature, TopK, Seed]),
        action: Press { button: "measure-batch", fill: None },
        lesson: "A decode step reads every weight to make one token. Give it several sequences at once and it reads them once for all: run the same prompt's continuations one after another, then 1, 2, 4 and 8 at a time, and see what the batch buys on this page's engine.";
    KvBudget: "kv-budget", "The KV cache under a memory budget",
        model: true,
        presets: [(MaxTokens, Number(48.0)), (Temperature, Number(0.0)), (KvLayers, Number(80.0)), (KvHeads, Number(8.0)), (Context, Number(131072.0)), (HeldOutTokens, Number(600.0))],
        shows: These(&[Prompt, KvPolicy, KvBudget, KvSinks, KvPositions, KvGroups, MaxTokens, Temperature, Seed, HeldOutTokens, KvLayers, QueryHeads, KvHeads, HeadSize, KvBytes, Context]),
        action: Press { button: "generate-kv-budget", fill: None },
        lesson: "Give the cache a budget and choose what it keeps: the most recent tokens, the first few as attention sinks and the most recent, or the tokens that received the most attention. Share K/V heads among query heads (pooled from the model's own). Generate to watch tokens leave, step by step, against the full cache fed the same tokens; measure what each policy and each number of K/V heads costs on a passage the model never saw; price a cache with fewer K/V heads.";
    Serving: "serving", "Serving: continuous batching under an arrival trace",
        model: true,
        presets: [(MaxTokens, Number(16.0)), (Temperature, Number(0.8)), (TopK, Number(40.0))],
        shows: These(&[Prompt, Rate, Requests, Slots, Scheduler, StaticWait, MaxTokens, Temperature, TopK, Seed, Trace]),
        action: Press { button: "measure-serve", fill: None },
        lesson: "Requests arrive while others are being served. Replay one trace three ways on this page's engine: one at a time, static batches (wait for B, run them until all finish), and continuous batching (a newcomer's prompt is prefilled into any free slot while the others keep decoding). Each cell of the charts is one slot at one step; every request's text is checked against its run alone.";
    Speculative: "speculative", "Speculative decoding: a draft guesses, the model checks",
        model: true,
        presets: [(Temperature, Number(0.0)), (MaxTokens, Number(48.0)), (Prompt, Text("ROMEO:"))],
        shows: These(&[Prompt, Speculate, DraftLayers, MaxTokens, Temperature, TopK, Seed]),
        action: Press { button: "measure-spec", fill: None },
        lesson: "A cheap draft (here the model's own first blocks) proposes K tokens; the model checks all K in one pass and keeps them up to the first it disagrees with, then adds its own token. Greedy, the text is exactly the model's own; sampled, the accept-or-resample rule keeps its distribution. Watch each round, the acceptance rate α and what it buys on this device.";
    LogitLens: "logit-lens", "The logit lens: when does the answer form?",
        model: true,
        presets: [],
        shows: These(&[Prompt]),
        action: Press { button: "read-lens", fill: None },
        lesson: "Stop the model after each block and read its residual stream through the final LayerNorm and the LM head: what would it predict there? Each cell is one position after one block; click one for its top 10.";
    Attention: "attention", "Attention: where each token looks",
        model: true,
        presets: [(MaxTokens, Number(16.0))],
        shows: These(&[Prompt, MaxTokens, FirstToken]),
        action: Press { button: "read-attention", fill: None },
        lesson: "Every head of every layer, read live from the model: row i of a map is where token i looks. Click a head for its map, hover a row to tint the text, and hide the first token to see past the attention sink.";
    BeamTree: "beam-tree", "Beam search: every candidate, kept or pruned",
        model: true,
        presets: [(Prompt, Text(BEAM_PROMPT)), (MaxTokens, Number(16.0)), (EndsAt, Text("line")), (TopK, Number(40.0))],
        shows: These(&[Prompt, MaxTokens, Beams, LengthPenalty, PromptInLength, EndsAt, Temperature, TopK, Seed]),
        action: Press { button: "run-beams", fill: None },
        lesson: "Beam search keeps the B most likely texts at every step instead of one. Each step ranks the best extensions of the live beams (the 2·B best are drawn): the best B go on, the rest are pruned, and an extension ending on an end token finishes a hypothesis. Drag the length penalty to re-rank the finished ones, and compare with a sampled text.";
    Quiz: "quiz", "Predict, then verify",
        model: true,
        presets: [],
        shows: These(&[]),
        action: Press { button: "quiz-check", fill: Some(("quiz-answer", "0.5")) },
        lesson: "Answer each question first, then check: the page computes the answer with the same pipeline as every other widget, on the live model or the question's own logits, and shows the bars with the answer marked. A course author writes the questions into the link, by hand or with the builder below.";
    CompareModels: "compare-models", "Two models side by side",
        model: true,
        presets: [(MaxTokens, Number(24.0)), (Temperature, Number(0.0))],
        shows: These(&[Prompt, ModelB, WeightsB, Temperature, TopK, TopP, MinP, MaxTokens, Seed]),
        action: Press { button: "generate-compare-models", fill: None },
        lesson: "Run one prompt through two models at once: this page's model and model B (another checkpoint, or the same one in another weight format). Both generate with the same settings and the same seed; at each step their next-token distributions stand side by side, with the KL divergence between them and whether they put the same token first, where their vocabularies match.";
    Device: "device", "This device, measured",
        model: true,
        presets: [],
        shows: These(&[]),
        action: Press { button: "measure-device", fill: None },
        lesson: "How this browser and this machine run the model: how long the page took to become ready (the download, the engine's start, the first token), the prompt's pass and each decode step in each kernel profile the chooser would time here, the device's memory read rate and which kernels were chosen and why. Copy the report to compare devices, or to send with a bug report.";
}

impl Widget {
    /// Its row in the table.
    pub fn spec(self) -> &'static WidgetSpec {
        &WIDGETS[self as usize]
    }

    /// Every widget, in lesson order.
    pub fn all() -> impl Iterator<Item = Widget> {
        WIDGETS.iter().map(|s| s.widget)
    }

    /// The controls each compare column sets for itself (the URL carries
    /// each as a list, one value per column); the others are shared.
    pub const COMPARE_COLUMN_CONTROLS: [Control; 2] = [Control::Temperature, Control::TopK];

    /// `compare`'s columns by default — greedy; low T; medium T + small k;
    /// higher T + larger k — one value per [`Self::COMPARE_COLUMN_CONTROLS`] entry.
    pub const COMPARE_COLUMNS: [[f64; 2]; 4] = [[0.0, 0.0], [0.3, 0.0], [0.8, 10.0], [1.2, 100.0]];

    /// The `widget=` value.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    pub fn from_name(name: &str) -> Option<Widget> {
        Widget::all().find(|w| w.name() == name.trim())
    }

    /// Its heading.
    pub fn title(self) -> &'static str {
        self.spec().title
    }

    /// One sentence on what to try.
    pub fn lesson(self) -> &'static str {
        self.spec().lesson
    }

    /// Whether it needs the model (the others also run on `logits=`).
    pub fn needs_model(self) -> bool {
        self.spec().needs_model
    }

    /// Its starting values, set before the URL's (which win).
    pub fn presets(self) -> &'static [(Control, Preset)] {
        self.spec().presets
    }

    /// What a learner does first on it.
    pub fn action(self) -> Action {
        self.spec().action
    }

    /// The controls shown when the URL does not say.
    pub fn default_controls(self) -> Vec<Control> {
        match self.spec().shows {
            Shows::These(controls) => controls.to_vec(),
            Shows::Shaping => Control::playground()
                .filter(|c| {
                    !matches!(c.spec().drives, Drives::Run(_) | Drives::Stop | Drives::Chat)
                })
                .collect(),
            Shows::Running => {
                Control::playground().filter(|c| !matches!(c.spec().drives, Drives::View)).collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_row_is_its_widget_and_names_are_unique() {
        for (i, spec) in WIDGETS.iter().enumerate() {
            assert_eq!(spec.widget as usize, i, "{}: the table is in the enum's order", spec.name);
            assert_eq!(Widget::from_name(spec.name), Some(spec.widget));
        }
    }
}
