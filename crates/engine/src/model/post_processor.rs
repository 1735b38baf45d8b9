//! The special tokens a tokenizer.json's `post_processor` puts around a
//! text (`add_special_tokens`, `tokenizers`' default): Llama 3's
//! `<|begin_of_text|>`, TinyLlama's and Llama 2's `<s>`. GPT-2's
//! (`ByteLevel`) adds none.

use serde_json::Value;

/// Ids before and after a single text's own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Template {
    pub prefix: Vec<u32>,
    pub suffix: Vec<u32>,
}

impl Template {
    /// The template of a `post_processor`: absent, `ByteLevel` (offsets
    /// only), `TemplateProcessing`, or a `Sequence` of those. `Err` names any
    /// other processor.
    pub fn from_json(post: Option<&Value>) -> Result<Template, String> {
        let Some(post) = post.filter(|p| !p.is_null()) else { return Ok(Template::default()) };
        match post.get("type").and_then(Value::as_str).unwrap_or("?") {
            "ByteLevel" => Ok(Template::default()),
            "TemplateProcessing" => single(post),
            "Sequence" => {
                let parts = post.get("processors").and_then(Value::as_array);
                let parts = parts.map(Vec::as_slice).unwrap_or(&[]).iter();
                let templates = parts.map(|p| Template::from_json(Some(p)));
                let templates = templates.collect::<Result<Vec<_>, _>>()?;
                let mut made = templates.into_iter().filter(|t| *t != Template::default());
                let first = made.next().unwrap_or_default();
                match made.next() {
                    None => Ok(first),
                    Some(_) => Err("its post_processor has two templates".into()),
                }
            }
            other => Err(format!(
                "its post_processor is {other}: Decode Lab reads TemplateProcessing and ByteLevel"
            )),
        }
    }

    /// `ids` with the template's tokens around them.
    pub fn around(&self, ids: Vec<u32>) -> Vec<u32> {
        if self.prefix.is_empty() && self.suffix.is_empty() {
            return ids;
        }
        [&self.prefix[..], &ids, &self.suffix].concat()
    }
}

/// `TemplateProcessing`'s `single`: special tokens, then `$A`, then more.
fn single(post: &Value) -> Result<Template, String> {
    let items = post.get("single").and_then(Value::as_array);
    let items = items.ok_or("its TemplateProcessing has no `single` list")?;
    let specials = post.get("special_tokens");
    let mut template = Template::default();
    let mut seen_text = false;
    for item in items {
        if let Some(seq) = item.get("Sequence") {
            match seq.get("id").and_then(Value::as_str) {
                Some("A") if !seen_text => seen_text = true,
                _ => return Err("its TemplateProcessing's `single` is not one text ($A)".into()),
            }
            continue;
        }
        let name = item.get("SpecialToken").and_then(|t| t.get("id")).and_then(Value::as_str);
        let name = name.ok_or("an item of its TemplateProcessing is neither text nor a token")?;
        let ids = specials.and_then(|s| s.get(name)).and_then(|t| t.get("ids"));
        let ids = ids
            .and_then(Value::as_array)
            .ok_or_else(|| format!("its TemplateProcessing uses {name:?} without its ids"))?;
        let ids = ids.iter().map(|id| id.as_u64().and_then(|id| u32::try_from(id).ok()));
        let ids = ids.collect::<Option<Vec<u32>>>();
        let ids = ids.ok_or_else(|| format!("the ids of {name:?} are not numbers"))?;
        match seen_text {
            false => template.prefix.extend(ids),
            true => template.suffix.extend(ids),
        }
    }
    match seen_text {
        true => Ok(template),
        false => Err("its TemplateProcessing's `single` has no text ($A)".into()),
    }
}
