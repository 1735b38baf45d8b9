//! Chat templates: an instruction-tuned model's `chat_template` (in
//! `tokenizer_config.json`, or `chat_template.jinja` beside it) rendered as
//! transformers' `apply_chat_template` renders it — Jinja with
//! `trim_blocks` and `lstrip_blocks`, the turns as `messages`,
//! `add_generation_prompt`, the special tokens by name (`bos_token` …),
//! `raise_exception`, and Python's string methods. The text it gives is
//! encoded without the tokenizer's own special tokens (the template writes
//! them). Checked against `apply_chat_template` (tests/chat.rs, fixtures from
//! tools/golden/make_chat_golden.py).

use serde_json::Value;

use super::tokenizer::Tokenizer;
use crate::error::{EngineError, Result};

/// Who says a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

/// One turn of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Turn {
    pub role: Role,
    pub content: String,
}

/// A conversation as the model reads it ([`ChatTemplate::prompt`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ChatPrompt {
    /// The template's text.
    pub text: String,
    /// (tokens) its ids.
    pub ids: Vec<u32>,
    /// The ids that end the model's turn.
    pub end_of_turn: Vec<u32>,
}

/// A model's chat template and the special tokens it may name.
#[derive(Clone, Debug)]
pub struct ChatTemplate {
    source: String,
    /// (`bos_token`, `<s>`) …: tokenizer_config.json's `*_token` strings.
    specials: Vec<(String, String)>,
}

fn bad(m: impl Into<String>) -> EngineError {
    EngineError::ChatTemplate(m.into())
}

impl ChatTemplate {
    /// The template of a `tokenizer_config.json` (`jinja`: a
    /// `chat_template.jinja` file's text, which takes precedence, as in
    /// transformers). `None`: the model has no chat template.
    pub fn from_config(config: &[u8], jinja: Option<&str>) -> Result<Option<ChatTemplate>> {
        let json: Value = serde_json::from_slice(config)
            .map_err(|e| bad(format!("tokenizer_config.json is not valid JSON: {e}")))?;
        let specials =
            json.as_object().into_iter().flatten().filter(|(k, _)| k.ends_with("_token"));
        let specials = specials.filter_map(|(k, v)| Some((k.clone(), token_text(v)?))).collect();
        let source = match (jinja, json.get("chat_template")) {
            (Some(text), _) => text.to_string(),
            (None, None | Some(Value::Null)) => return Ok(None),
            (None, Some(Value::String(s))) => s.clone(),
            // A list of named templates: the one called "default".
            (None, Some(Value::Array(named))) => {
                let default = named.iter().find(|t| t.get("name") == Some(&"default".into()));
                let text = default.and_then(|t| t.get("template")).and_then(Value::as_str);
                text.ok_or_else(|| bad("tokenizer_config.json has no template named \"default\""))?
                    .to_string()
            }
            (None, Some(_)) => {
                return Err(bad("tokenizer_config.json's chat_template is not text"))
            }
        };
        // A syntax error shows when the model opens, not at the first turn.
        environment().template_from_str(&source).map_err(jinja_error)?;
        Ok(Some(ChatTemplate { source, specials }))
    }

    /// The template of a model directory (native only): `None` where it has
    /// no `tokenizer_config.json` or no template in it.
    pub fn from_dir(dir: &std::path::Path) -> Result<Option<ChatTemplate>> {
        use crate::model::{read, MAX_CONFIG_BYTES};
        let config = dir.join("tokenizer_config.json");
        let jinja = dir.join("chat_template.jinja");
        let jinja = match jinja.exists() {
            true => Some(String::from_utf8_lossy(&read(&jinja, MAX_CONFIG_BYTES)?).into_owned()),
            false => None,
        };
        match config.exists() {
            true => ChatTemplate::from_config(&read(&config, MAX_CONFIG_BYTES)?, jinja.as_deref()),
            false => Ok(None),
        }
    }

    /// The text of `turns`, ending with the assistant's header where
    /// `add_generation_prompt` (the model writes the next turn).
    pub fn render(&self, turns: &[Turn], add_generation_prompt: bool) -> Result<String> {
        let env = environment();
        let template = env.template_from_str(&self.source).map_err(jinja_error)?;
        let mut context: std::collections::BTreeMap<&str, minijinja::Value> =
            self.specials.iter().map(|(k, v)| (k.as_str(), v.as_str().into())).collect();
        context.insert("messages", minijinja::Value::from_serialize(turns));
        context.insert("add_generation_prompt", add_generation_prompt.into());
        template.render(context).map_err(jinja_error)
    }

    /// The text of `user`'s turn (after a `system` turn, where given, and
    /// the `earlier` turns of the conversation, user and assistant in
    /// turn) ending with the assistant's header: what the model reads.
    pub fn conversation(
        &self,
        system: Option<&str>,
        earlier: &[String],
        user: &str,
    ) -> Result<String> {
        if earlier.len() % 2 == 1 {
            // Two user turns in a row: many templates raise, the others
            // would run them together without saying so.
            return Err(bad(format!(
                "{} earlier turns: they alternate user and assistant, so there are two per \
                 exchange (the prompt is the next user turn)",
                earlier.len()
            )));
        }
        let roles = [Role::User, Role::Assistant].into_iter().cycle();
        let said = roles.zip(earlier).map(|(role, text)| Turn { role, content: text.clone() });
        let system = system.map(|s| Turn { role: Role::System, content: s.to_string() });
        let user = Turn { role: Role::User, content: user.to_string() };
        let turns: Vec<Turn> = system.into_iter().chain(said).chain([user]).collect();
        self.render(&turns, true)
    }

    /// [`conversation`](Self::conversation)'s text, its ids and the ids
    /// that end the reply.
    pub fn prompt(
        &self,
        tokenizer: &Tokenizer,
        system: Option<&str>,
        earlier: &[String],
        user: &str,
    ) -> Result<ChatPrompt> {
        let text = self.conversation(system, earlier, user)?;
        let ids = tokenizer.encode_plain(&text)?;
        Ok(ChatPrompt { text, ids, end_of_turn: self.end_of_turn(tokenizer) })
    }

    /// The ids that end the model's turn: its `eos_token` (`<|im_end|>`,
    /// `<|eot_id|>`, `</s>`), where the tokenizer has it.
    pub fn end_of_turn(&self, tokenizer: &Tokenizer) -> Vec<u32> {
        let eos = self.specials.iter().find(|(k, _)| k == "eos_token");
        eos.and_then(|(_, text)| tokenizer.token_to_id(text)).into_iter().collect()
    }
}

/// Jinja as transformers sets it up for chat templates.
fn environment() -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function("raise_exception", |message: String| -> std::result::Result<String, _> {
        Err(minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, message))
    });
    env
}

/// A special token as tokenizer_config.json writes it: a string, or an
/// object with its `content`.
fn token_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("content").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

/// A Jinja error as one sentence: the template's own message for
/// `raise_exception`, else minijinja's (with the line).
fn jinja_error(e: minijinja::Error) -> EngineError {
    match (e.kind(), e.detail()) {
        (minijinja::ErrorKind::InvalidOperation, Some(detail)) => bad(detail.to_string()),
        _ => bad(e.to_string()),
    }
}
