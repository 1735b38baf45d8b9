//! A [`Link`] to a [`Host`] in the same thread: what the native tests run a
//! remote session through. Every message still crosses as its JSON header
//! and float payload, so the tests cover the encoding the worker uses.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;

use super::wire::{decode, encode, Answer, Reply, Request};
use super::{Host, Link};
use crate::error::{EngineError, Result};

/// A host answering in place.
pub struct Loopback {
    host: RefCell<Host>,
    /// Every header sent, in order (the tests count them).
    pub sent: RefCell<Vec<String>>,
}

impl Loopback {
    pub fn new(host: Host) -> Loopback {
        Loopback { host: RefCell::new(host), sent: RefCell::new(Vec::new()) }
    }

    fn pass(&self, request: &Request) -> Result<Option<Answer>> {
        let json = encode(request);
        self.sent.borrow_mut().push(json.clone());
        let answer = self.host.borrow_mut().handle(decode(&json)?);
        answer
            .map(|a| Ok(Answer { reply: decode::<Reply>(&encode(&a.reply))?, floats: a.floats }))
            .transpose()
    }
}

impl Link for Loopback {
    fn call(&self, request: Request) -> Pin<Box<dyn Future<Output = Result<Answer>>>> {
        let answer = self.pass(&request).and_then(|a| {
            a.ok_or_else(|| EngineError::Remote(format!("no answer to {request:?}")))
        });
        Box::pin(async move { answer })
    }

    fn send(&self, request: Request) {
        // An unawaited request answers nothing; its error waits in the host.
        let _ = self.pass(&request);
    }
}
