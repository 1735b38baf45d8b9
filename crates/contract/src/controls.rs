//! The one table of controls. Everything that knows a control — the controls
//! panel, the URL reader and writer, `controls=` (shown / locked), widget
//! presets, the compare widget's columns, the clamping notices and the run's
//! settings — iterates [`SPECS`]. Adding a control is one row in
//! `controls!` below (its test id is its URL name with `_` → `-`).

use engine::beam::Ends;
use engine::kernels::KernelsChoice;
use engine::run::Job;
use engine::sample::Settings;
use engine::storage::format::Format;

/// The range and step of a number control.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
    pub step: f64,
}

/// What a control edits, and its starting value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Input {
    /// A slider and a number box; `whole`: integers only.
    Number { range: Range, whole: bool, default: f64 },
    /// Text (the prompt has its own editor; the others a text box).
    Text { default: &'static str },
    /// One of a fixed list of names (a drop-down).
    Choice { options: &'static [&'static str], default: &'static str },
}

/// What a control's value drives.
#[derive(Clone, Copy)]
pub enum Drives {
    /// A field of the sampling settings: moving it re-runs only the pipeline.
    Setting(fn(&mut Settings, f64)),
    /// A field of the run (seed, length), read when a run starts.
    Run(fn(&mut Job, f64)),
    /// The run's stop strings (one per line; `\n` typed literally is a newline).
    Stop,
    /// The prompt.
    Prompt,
    /// Whether the prompt is a user's turn in the model's chat template, and
    /// the system turn before it: read when a run starts; in links only when set.
    Chat,
    /// Only what the page shows.
    View,
    /// What one lesson's own panels read (its formats, its histogram, its
    /// calculator): not part of the playground, and in links only when set.
    Lesson,
    /// How the engine is opened: read when the model loads (a change
    /// reloads the page); in links only when set.
    Engine,
}

/// One control: its row in the table.
pub struct Spec {
    pub control: Control,
    /// URL parameter and `controls=` name.
    pub name: &'static str,
    pub label: &'static str,
    /// One line on what it does (the tooltip).
    pub help: &'static str,
    pub input: Input,
    pub drives: Drives,
}

const fn real(min: f64, max: f64, step: f64, default: f64) -> Input {
    Input::Number { range: Range { min, max, step }, whole: false, default }
}

const fn whole(min: f64, max: f64, default: f64) -> Input {
    Input::Number { range: Range { min, max, step: 1.0 }, whole: true, default }
}

/// The prompt a page starts with: a speaker line as the corpus writes them.
pub const DEFAULT_PROMPT: &str = "Romeo.\n";

macro_rules! controls {
    ($($(#[doc = $help:literal])+ $control:ident: $name:literal, $label:literal, $input:expr, $drives:expr;)*) => {
        /// A control, named by type; its row is [`Control::spec`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Control { $($(#[doc = $help])+ $control),* }

        /// Every control, in the page's order.
        pub const SPECS: &[Spec] = &[$(Spec {
            control: Control::$control, name: $name, label: $label, input: $input,
            drives: $drives, help: concat!($($help),+).trim_ascii(),
        }),*];
    };
}

controls! {
    /// the text the model continues
    Prompt: "prompt", "Prompt", Input::Text { default: DEFAULT_PROMPT }, Drives::Prompt;
    /// yes: the prompt is a user's turn in the model's chat template (an instruction-tuned model's
    /// tokenizer_config.json), and the reply ends at the model's end-of-turn token
    Chat: "chat", "Chat", Input::Choice { options: &NO_YES, default: "no" }, Drives::Chat;
    /// with chat: a system turn before the user's (empty: none, or the template's own default)
    System: "system", "System turn", Input::Text { default: "" }, Drives::Chat;
    /// with chat: the conversation before the prompt, one turn per line, user and assistant in
    /// turn (\n in a line: a newline); Next turn adds the prompt and the reply
    Turns: "turns", "Earlier turns", Input::Text { default: "" }, Drives::Chat;
    /// 0 = greedy (always the most likely token)
    Temperature: "temperature", "Temperature", real(0.0, 3.0, 0.05, 0.8),
        Drives::Setting(|s, v| s.temperature = v);
    /// keep the k most likely tokens; 0 = off
    TopK: "top_k", "Top-k", whole(0.0, 200.0, 0.0), Drives::Setting(|s, v| s.top_k = v as i64);
    /// keep the smallest set whose mass reaches p; 1 = off
    TopP: "top_p", "Top-p", real(0.0, 1.0, 0.01, 1.0), Drives::Setting(|s, v| s.top_p = v);
    /// keep tokens with p ≥ min-p · p(top token); 0 = off
    MinP: "min_p", "Min-p", real(0.0, 1.0, 0.01, 0.0), Drives::Setting(|s, v| s.min_p = v);
    /// divides the logits of tokens already seen (multiplies negative ones); 1 = off
    RepetitionPenalty: "repetition_penalty", "Repetition penalty", real(0.5, 2.0, 0.05, 1.0),
        Drives::Setting(|s, v| s.repetition_penalty = v);
    /// subtracts this × (times a token was seen) from its logit; 0 = off
    FrequencyPenalty: "frequency_penalty", "Frequency penalty", real(-2.0, 2.0, 0.05, 0.0),
        Drives::Setting(|s, v| s.frequency_penalty = v);
    /// subtracts this from the logit of every token already seen; 0 = off
    PresencePenalty: "presence_penalty", "Presence penalty", real(-2.0, 2.0, 0.05, 0.0),
        Drives::Setting(|s, v| s.presence_penalty = v);
    /// bans any token that would repeat an n-gram of the text so far; 0 = off
    NoRepeatNgram: "no_repeat_ngram", "No-repeat n-gram", whole(0.0, 10.0, 0.0),
        Drives::Setting(|s, v| s.no_repeat_ngram = v as usize);
    /// Generate stops after this many tokens
    MaxTokens: "max_tokens", "Max new tokens", whole(1.0, 1000.0, 60.0),
        Drives::Run(|j, v| j.max_tokens = v as usize);
    /// same seed + same settings = same text
    Seed: "seed", "Seed", whole(0.0, 4294967295.0, 1.0), Drives::Run(|j, v| j.seed = v as u64);
    /// how many of the most likely tokens the panel draws
    Bars: "bars", "Bars shown", whole(1.0, 100.0, 20.0), Drives::View;
    /// generation ends before the first of these that appears; \n means a newline
    Stop: "stop", "Stop strings (one per line)", Input::Text { default: "" }, Drives::Stop;
    /// the weight format of the first text the quantization lesson writes
    VariantA: "variant_a", "Text A's weights", weights("f32"), Drives::Lesson;
    /// the weight format of the second text, compared token by token with the first
    VariantB: "variant_b", "Text B's weights", weights("int4"), Drives::Lesson;
    /// how much of the held-out passage the quality figures read; 0 = all of it
    HeldOutTokens: "heldout_tokens", "Held-out tokens scored", whole(0.0, 1000000.0, 0.0),
        Drives::Lesson;
    /// the checkpoint name of the matrix whose values the histogram shows
    Tensor: "tensor", "Weight matrix", Input::Text { default: "" }, Drives::Lesson;
    /// the model size the memory calculator prices in every format
    ParamsB: "params_b", "Parameters (billions)", real(0.001, 10000.0, 0.1, 70.0), Drives::Lesson;
    /// one-pass: the whole prompt in one forward pass; token-by-token: one decode step per prompt
    /// token (as a model without a prefill would)
    PrefillMode: "prefill", "Prompt goes in", Input::Choice { options: &PREFILL_MODES, default: "one-pass" },
        Drives::Lesson;
    /// the longest sequence the KV-cache lesson times; 0 = the model's whole context
    UpTo: "up_to", "Measure up to n =", whole(0.0, 100000.0, 0.0), Drives::Lesson;
    /// the KV calculator's transformer blocks (each keeps its own K and V)
    KvLayers: "kv_layers", "Layers", whole(1.0, 1000.0, 32.0), Drives::Lesson;
    /// heads that keep keys and values (fewer than query heads with grouped-query attention)
    KvHeads: "kv_heads", "KV heads", whole(1.0, 1000.0, 32.0), Drives::Lesson;
    /// numbers per key (and per value) in one head
    HeadSize: "head_size", "Head size", whole(1.0, 4096.0, 128.0), Drives::Lesson;
    /// how the cache stores a number: 4 f32, 2 f16/bf16, 1 int8/fp8, 0.5 int4
    KvBytes: "kv_bytes", "Bytes per number", real(0.5, 8.0, 0.5, 2.0), Drives::Lesson;
    /// tokens held per sequence
    Context: "context", "Context (tokens)", whole(1.0, 10000000.0, 4096.0), Drives::Lesson;
    /// sequences served together, each with its own cache
    Batch: "batch", "Sequences at once", whole(1.0, 4096.0, 1.0), Drives::Lesson;
    /// window: the most recent tokens; sinks: the first kv_sinks tokens and the most recent
    /// (StreamingLLM); heavy: the half of the budget that received the most attention and the most
    /// recent half (H2O)
    KvPolicy: "kv_policy", "Cache keeps", Input::Choice { options: &KV_POLICIES, default: "sinks" },
        Drives::Lesson;
    /// tokens the cache holds at most (past the model's context: the whole context)
    KvBudget: "kv_budget", "Budget (tokens)", whole(1.0, 100000.0, 32.0), Drives::Lesson;
    /// the first tokens the sinks policy always keeps (within the budget)
    KvSinks: "kv_sinks", "Sinks", whole(0.0, 1000.0, 4.0), Drives::Lesson;
    /// original: a rotary model's kept tokens keep the positions they came in at (evicting is
    /// masking); cache: the sinks policy numbers them by their place in the cache (StreamingLLM)
    KvPositions: "kv_positions", "Positions", Input::Choice { options: &KV_POSITIONS, default: "original" },
        Drives::Lesson;
    /// pool the model's K/V heads into this many groups (grouped-query attention; 1 = multi-query);
    /// 0 = the model's own heads
    KvGroups: "kv_groups", "K/V head groups", whole(0.0, 1000.0, 0.0), Drives::Lesson;
    /// attention heads that ask queries; with grouped-query attention several share one K/V head
    QueryHeads: "q_heads", "Query heads", whole(1.0, 1000.0, 64.0), Drives::Lesson;
    /// the logit lens's chosen prompt position, from 1; 0 = the last
    LensPosition: "position", "Position", whole(0.0, 100000.0, 0.0), Drives::Lesson;
    /// the logit lens's chosen layer: 0 = the embedding, k = after block k (past the last: the
    /// last)
    LensLayer: "layer", "Layer", whole(0.0, 1000.0, 1000.0), Drives::Lesson;
    /// the attention view's chosen layer, from 0 (past the last: the last)
    AttLayer: "att_layer", "Layer", whole(0.0, 1000.0, 0.0), Drives::Lesson;
    /// the attention view's chosen head, from 0 (past the last: the last)
    AttHead: "att_head", "Head", whole(0.0, 1000.0, 0.0), Drives::Lesson;
    /// hide: leave the first token out of every row and renormalise (set the attention sink aside)
    FirstToken: "first_token", "First token", Input::Choice { options: &FIRST_TOKEN, default: "keep" },
        Drives::Lesson;
    /// how many texts beam search keeps at every step; 1 = greedy
    Beams: "beams", "Beams (B)", whole(1.0, 8.0, 3.0), Drives::Lesson;
    /// finished hypotheses are ranked by log-probability / length^this: 0 = the sum (short ones
    /// win), 1 = per token, above 1 favours long ones
    LengthPenalty: "length_penalty", "Length penalty", real(-2.0, 2.0, 0.1, 1.0), Drives::Lesson;
    /// yes: the length the penalty divides by includes the prompt's tokens (Hugging Face before
    /// v4.36)
    PromptInLength: "prompt_in_length", "Prompt counts in the length", Input::Choice { options: &NO_YES, default: "no" },
        Drives::Lesson;
    /// end-of-text: the model's end token; line: also any token holding a line break
    EndsAt: "ends_at", "A hypothesis ends at", Input::Choice { options: &Ends::NAMES, default: "end-of-text" },
        Drives::Lesson;
    /// the serving lesson's trace: requests arriving per decode step on average (a seeded Poisson
    /// process)
    Rate: "rate", "Arrivals per step", real(0.05, 8.0, 0.05, 0.5), Drives::Lesson;
    /// how many requests the serving lesson's trace sends
    Requests: "requests", "Requests", whole(1.0, 64.0, 8.0), Drives::Lesson;
    /// sequences the server runs at once, each in its own cache slot
    Slots: "slots", "Slots (B)", whole(1.0, 16.0, 4.0), Drives::Lesson;
    /// once: one request at a time; static: wait for B requests (or the wait), run them until all
    /// finish; continuous: admit into any free slot at every step; all: the three on the same trace
    Scheduler: "scheduler", "Scheduler", Input::Choice { options: &SCHEDULERS, default: "all" },
        Drives::Lesson;
    /// how long static batching waits for a full batch after the oldest request arrived before it
    /// starts with fewer
    StaticWait: "static_wait", "Static batch waits (steps)", whole(0.0, 256.0, 4.0), Drives::Lesson;
    /// requests typed in, one per line or separated by ;: the step it arrives at, its prompt (0 =
    /// yours, 1–4 the built-in ones), its max tokens and seed; empty = the Poisson trace
    Trace: "trace", "Typed trace (step prompt max_tokens seed; …)", Input::Text { default: "" },
        Drives::Lesson;
    /// tokens the draft proposes before the model checks them all in one pass
    Speculate: "speculate", "Drafted per round (K)", whole(1.0, 16.0, 4.0), Drives::Lesson;
    /// self-speculation: the draft is the model stopped after L blocks and read through its final
    /// LayerNorm and LM head (the logit lens)
    DraftLayers: "draft_layers", "Draft: the model's first L blocks", whole(1.0, 1000.0, 1.0),
        Drives::Lesson;
    /// the second model of the side-by-side lesson: a Hub id or a folder address, as model= takes;
    /// empty = this page's model again, in model B's weights
    ModelB: "model_b", "Model B", Input::Text { default: "" }, Drives::Lesson;
    /// the weight format model B is held in: auto (its checkpoint's own, f16 for an f16 checkpoint)
    /// or a format
    WeightsB: "weights_b", "Model B's weights", Input::Choice { options: &WEIGHTS_B, default: "int4" },
        Drives::Lesson;
    /// the device widget measures as the page loads and POSTs its report as JSON to this address,
    /// which must be on this page's own origin (a harness's); empty = measure on Measure, nothing
    /// sent
    Report: "report", "Send the report to", Input::Text { default: "" }, Drives::Lesson;
    /// the shape of the WGSL kernels on WebGPU: auto (cpu on a software adapter, else each timed
    /// once on this GPU and the fastest remembered), cpu (one invocation per output: CPU adapters),
    /// gpu (k split over each workgroup: real GPUs), or a gpu layout by name
    Kernels: "kernels", "GPU kernels", Input::Choice { options: &KernelsChoice::NAMES, default: "auto" },
        Drives::Engine;
}

/// A yes/no choice's options.
pub const NO_YES: [&str; 2] = ["no", "yes"];

/// `first_token=`'s choices.
pub const FIRST_TOKEN: [&str; 2] = ["keep", "hide"];

/// `kv_policy=`'s choices: which tokens the kv-budget lesson's cache keeps.
pub const KV_POLICIES: [&str; 3] = ["window", "sinks", "heavy"];

/// `kv_positions=`'s choices: which position a rotary model's kept key is turned by.
pub const KV_POSITIONS: [&str; 2] = ["original", "cache"];

/// `scheduler=`'s choices: which schedulers the serving lesson replays the trace under.
pub const SCHEDULERS: [&str; 4] = ["all", "once", "static", "continuous"];

/// `prefill=`'s choices: how the cost lesson feeds the prompt.
pub const PREFILL_MODES: [&str; 2] = ["one-pass", "token-by-token"];

/// `weights_b=`'s choices: `auto`, then every format ([`Format::NAMES`]).
pub const WEIGHTS_B: [&str; Format::NAMES.len() + 1] = {
    let mut names = ["auto"; Format::NAMES.len() + 1];
    let mut i = 0;
    while i < Format::NAMES.len() {
        names[i + 1] = Format::NAMES[i];
        i += 1;
    }
    names
};

/// A choice of weight format, starting at `default`.
const fn weights(default: &'static str) -> Input {
    Input::Choice { options: &Format::NAMES, default }
}

impl Control {
    /// Its row in the table.
    pub fn spec(self) -> &'static Spec {
        &SPECS[self as usize]
    }

    /// Every control, in the page's order.
    pub fn all() -> impl Iterator<Item = Control> {
        SPECS.iter().map(|s| s.control)
    }

    /// Every control but the lessons' own and the engine's: the playground's.
    pub fn playground() -> impl Iterator<Item = Control> {
        Control::all().filter(|c| !matches!(c.spec().drives, Drives::Lesson | Drives::Engine))
    }

    /// The control whose URL name is `name`.
    pub fn from_name(name: &str) -> Option<Control> {
        SPECS.iter().find(|s| s.name == name).map(|s| s.control)
    }
}

/// A value read from a URL or typed, and whether it had to be changed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Taken {
    pub value: f64,
    /// Rounded to a whole number or clamped into the range.
    pub adjusted: bool,
}

/// Longest piece of a user's value a message repeats (a 100 KB value is not echoed).
const ECHO_CHARS: usize = 40;

/// `raw` as a message shows it: quoted, cut after a few dozen characters.
pub fn echo(raw: &str) -> String {
    match raw.char_indices().nth(ECHO_CHARS) {
        Some((cut, _)) => format!("“{}…” ({} characters)", &raw[..cut], raw.chars().count()),
        None => format!("“{raw}”"),
    }
}

impl Spec {
    /// The test id of its input (`top_k` → `top-k`).
    pub fn testid(&self) -> String {
        self.name.replace('_', "-")
    }

    /// `raw` parsed as this number control takes it: rounded when whole,
    /// clamped into the range. `Err` says why it could not be taken.
    pub fn read(&self, raw: &str) -> Result<Taken, String> {
        let Input::Number { range, whole, .. } = self.input else {
            return Err(format!("{} is not a number control", self.name));
        };
        let v: f64 = raw.trim().parse().map_err(|_| format!("{} is not a number", echo(raw)))?;
        if !v.is_finite() {
            return Err(format!("{} is not a finite number", echo(raw)));
        }
        let rounded = if whole { v.round() } else { v };
        let value = rounded.clamp(range.min, range.max);
        Ok(Taken { value, adjusted: value != v })
    }

    /// Why `raw` became `taken.value`, in words (for the notices).
    pub fn adjustment(&self, raw: &str, taken: Taken) -> String {
        let Input::Number { range, whole, .. } = self.input else { return String::new() };
        let v: f64 = raw.trim().parse().unwrap_or(taken.value);
        let why = if whole && v.fract() != 0.0 && (range.min..=range.max).contains(&v) {
            "takes whole numbers".to_string()
        } else {
            format!("is kept within {}–{}", range.min, range.max)
        };
        format!("{} {why}: {} became {}", self.name, echo(raw), taken.value)
    }

    /// The notice where a widget uses less of this control than asked
    /// because the model or the widget allows less (`limit` names what:
    /// "this model's layers 0–11"). Every widget that cuts a value says so,
    /// in the words of the URL's own range check ([`adjustment`](Self::adjustment)).
    pub fn limited(&self, asked: f64, used: f64, limit: &str) -> Option<String> {
        (asked != used)
            .then(|| format!("{} is kept within {limit}: {asked} became {used}", self.name))
    }
}

impl Spec {
    /// `raw` as this choice control takes it: one of its options (trimmed),
    /// or `Err` naming them.
    pub fn choose(&self, raw: &str) -> Result<&'static str, String> {
        let Input::Choice { options, .. } = self.input else {
            return Err(format!("{} is not a choice", self.name));
        };
        options
            .iter()
            .find(|o| **o == raw.trim())
            .copied()
            .ok_or_else(|| format!("{} is not one of {}", echo(raw), options.join(", ")))
    }
}

/// One stop string per line; `\n` typed literally means a newline.
pub fn stops(raw: &str) -> Vec<String> {
    raw.lines().filter(|l| !l.is_empty()).map(|l| l.replace("\\n", "\n")).collect()
}
