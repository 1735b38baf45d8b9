//! The character classes the pre-tokenizer patterns are written in: `\p{L}`,
//! `\p{N}`, `\s`, and the rest (Unicode general categories, from
//! `unicode-properties`).

use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

/// Which of the patterns' classes a character is in.
#[derive(Clone, Copy, PartialEq)]
pub enum Class {
    Letter,
    Number,
    Space,
    Other,
}

/// `c`'s class: whitespace (Rust's `White_Space`, as the patterns' `\s`)
/// before its general category.
pub fn class(c: char) -> Class {
    if c.is_whitespace() {
        return Class::Space;
    }
    match c.general_category_group() {
        GeneralCategoryGroup::Letter => Class::Letter,
        GeneralCategoryGroup::Number => Class::Number,
        _ => Class::Other,
    }
}
