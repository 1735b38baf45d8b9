//! Loading a model into the page: where its files come from ([`source`]),
//! the size check and yes before a big download ([`download`]), fetching
//! through the browser's model cache ([`cache`]) with what the cache records
//! about each file ([`stored`]), the files in order and parsed
//! ([`model_files`]), and how long each part took ([`times`]).

pub mod cache;
pub mod download;
pub mod model_files;
pub mod source;
pub mod stored;
pub mod times;
