//! Chat templates render as transformers' `apply_chat_template` does, and
//! their text encodes to its ids (fixtures from tools/golden/make_chat_golden.py).
#![cfg(not(target_arch = "wasm32"))] // native test: wasm has tests/browser.rs

mod common;

use decode_lab_engine::model::{ChatTemplate, Role, Tokenizer, Turn};
use serde_json::{json, Value};

fn cases() -> Vec<Value> {
    let path = common::fixtures().join("chat/cases.json");
    serde_json::from_slice::<Value>(&std::fs::read(path).unwrap())
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn tokenizer() -> Tokenizer {
    let path = common::fixtures().join("sentencepiece/legacy/tokenizer.json");
    Tokenizer::from_bytes(&std::fs::read(path).unwrap()).unwrap()
}

/// A template as a tokenizer_config.json carries it, with its special tokens.
fn template(case: &Value) -> ChatTemplate {
    let mut config = case["specials"].clone();
    config["chat_template"] = case["template"].clone();
    ChatTemplate::from_config(config.to_string().as_bytes(), None).unwrap().unwrap()
}

fn turns(messages: &Value) -> Vec<Turn> {
    let role = |r: &str| match r {
        "system" => Role::System,
        "user" => Role::User,
        _ => Role::Assistant,
    };
    let turns = messages.as_array().unwrap().iter();
    turns
        .map(|m| Turn {
            role: role(m["role"].as_str().unwrap()),
            content: m["content"].as_str().unwrap().into(),
        })
        .collect()
}

/// Five templates × four conversations × with and without the generation
/// prompt: the same text, byte for byte, and the same ids (no BOS of the
/// tokenizer's own: the template writes it).
#[test]
fn templates_render_as_transformers_renders_them() {
    let t = tokenizer();
    for case in cases() {
        let name = case["name"].as_str().unwrap();
        let chat = template(&case);
        for render in case["renders"].as_array().unwrap() {
            let gen = render["add_generation_prompt"].as_bool().unwrap();
            let text = chat.render(&turns(&render["messages"]), gen).unwrap();
            assert_eq!(text, render["text"].as_str().unwrap(), "{name}, generation prompt {gen}");
            let ids = common::json_ids(&render["ids"]);
            assert_eq!(t.encode_plain(&text).unwrap(), ids, "{name}: ids");
        }
    }
}

/// A conversation with earlier turns (system, user, assistant, then the
/// prompt's user turn) renders as transformers renders those messages; an
/// odd number of earlier turns (two user turns in a row) is refused with a
/// sentence, whatever the template would do.
#[test]
fn earlier_turns_render_as_transformers_renders_them() {
    let mut checked = 0;
    for case in cases() {
        let chat = template(&case);
        for render in case["renders"].as_array().unwrap() {
            let turns = turns(&render["messages"]);
            let roles: Vec<Role> = turns.iter().map(|t| t.role).collect();
            let multi = [Role::System, Role::User, Role::Assistant, Role::User];
            if roles != multi || !render["add_generation_prompt"].as_bool().unwrap() {
                continue;
            }
            let earlier = [turns[1].content.clone(), turns[2].content.clone()];
            let text = chat.conversation(Some(&turns[0].content), &earlier, &turns[3].content);
            assert_eq!(text.unwrap(), render["text"].as_str().unwrap(), "{}", case["name"]);
            let e = chat.conversation(None, &earlier[..1], "x").unwrap_err().to_string();
            assert!(e.contains("1 earlier turns: they alternate user and assistant"), "{e}");
            checked += 1;
        }
    }
    assert_eq!(checked, cases().len(), "every template has a multi-turn render");
}

/// A template's own `raise_exception` is the error, in its words; a
/// template that does not parse is refused when the model opens.
#[test]
fn template_errors_are_sentences() {
    for case in cases() {
        let repeated = [Role::User, Role::User].map(|role| Turn { role, content: "x".into() });
        let got = template(&case).render(&repeated, false);
        match case["error_for_repeated_user"].as_str() {
            Some(message) => {
                assert_eq!(got.unwrap_err().to_string(), format!("chat template: {message}"))
            }
            None => assert!(got.is_ok()),
        }
    }
    let broken = json!({"chat_template": "{% for m in messages %}{{ m.content }"});
    let e = ChatTemplate::from_config(broken.to_string().as_bytes(), None).unwrap_err().to_string();
    assert!(e.starts_with("chat template: syntax error"), "{e}");
    let number = json!({"chat_template": 3});
    let e = ChatTemplate::from_config(number.to_string().as_bytes(), None).unwrap_err().to_string();
    assert!(e.contains("chat_template is not text"), "{e}");
    assert!(ChatTemplate::from_config(b"{]", None).is_err());
}

/// Where a template may be: none, a list of named templates (the
/// "default" one), `chat_template.jinja` (which wins); special tokens as
/// objects; the end of turn is the eos token's id.
#[test]
fn templates_are_found_where_transformers_finds_them() {
    assert!(ChatTemplate::from_config(b"{}", None).unwrap().is_none());
    let named = json!({
        "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D{{ eos_token }}"}],
        "eos_token": {"content": "</s>", "special": true},
    });
    let chat = ChatTemplate::from_config(named.to_string().as_bytes(), None).unwrap().unwrap();
    assert_eq!(chat.render(&[], false).unwrap(), "D</s>");
    assert_eq!(chat.end_of_turn(&tokenizer()), [2]);
    let file = ChatTemplate::from_config(named.to_string().as_bytes(), Some("J")).unwrap().unwrap();
    assert_eq!(file.render(&[], false).unwrap(), "J");
    let no_default = json!({"chat_template": [{"name": "tool_use", "template": "T"}]});
    assert!(ChatTemplate::from_config(no_default.to_string().as_bytes(), None).is_err());
}

/// The random Llama of tests/fixtures/golden/llama_gqa, in its own chat
/// template (tokenizer_config.json): the prompt's ids and transformers'
/// greedy reply, token for token; and the run ends at the end of turn.
#[test]
fn a_llama_chat_replies_as_transformers_does() {
    use decode_lab_engine::cpu::CpuSession;
    use decode_lab_engine::run::{Done, Job, Run};
    use decode_lab_engine::sample::Settings;
    use decode_lab_engine::Session;
    let dir = common::fixtures().join("golden/llama_gqa");
    let path = common::fixtures().join("chat/llama_gqa_reply.json");
    let golden: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let (want_prompt, want_reply) =
        (common::json_ids(&golden["prompt_ids"]), common::json_ids(&golden["reply_ids"]));
    let t = Tokenizer::from_dir(&dir).unwrap();
    let chat = ChatTemplate::from_dir(&dir).unwrap().expect("the fixture has a chat template");
    let user = Turn { role: Role::User, content: golden["user"].as_str().unwrap().into() };
    let prompt = t.encode_plain(&chat.render(&[user], true).unwrap()).unwrap();
    assert_eq!(prompt, want_prompt);
    let model = common::golden_model("llama_gqa");
    let settings = Settings { temperature: 0.0, ..Settings::default() };
    let job = Job { settings, seed: 0, stop: Vec::new(), max_tokens: want_reply.len() };
    // `stop_at`: ids that end the turn; the tokens chosen and why it ended.
    let reply = |stop_at: &[u32]| {
        let session = Session::Cpu(CpuSession::new(model.clone()));
        let mut run = pollster::block_on(Run::start_ids(session, prompt.clone(), &job)).unwrap();
        run.end_at(stop_at);
        let mut tokens = Vec::new();
        loop {
            let step = pollster::block_on(run.step(&t, None)).unwrap();
            tokens.push(step.choice.token);
            if let Some(done) = step.done {
                return (tokens, done);
            }
        }
    };
    assert_eq!(reply(&chat.end_of_turn(&t)), (want_reply.clone(), Done::MaxTokens));
    // A token the model chooses, taken as its end of turn: the run ends there.
    let (tokens, done) = reply(&[want_reply[3]]);
    let first = want_reply.iter().position(|&id| id == want_reply[3]).unwrap();
    assert_eq!((tokens, done), (want_reply[..=first].to_vec(), Done::Eos));
}
