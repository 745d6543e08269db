//! The part every SSE-based provider shares: pull one batch of events per
//! network chunk, hand over what was decoded before an error (the error
//! follows on the next pull, so partial text reaches the user), and ask
//! the protocol what the end of the body means. A provider writes only
//! its [`SseDecoder`].

use super::{Event, SseStream};
use crate::Error;
use crate::host::http::Response;
use crate::kinds::provider::{EventStream, StreamEvent};

/// One wire protocol's reading of server-sent events.
pub trait SseDecoder: 'static {
    /// Decode one event (its data is never blank) into `out`.
    fn event(&mut self, event: &Event, out: &mut Vec<StreamEvent>) -> Result<(), Error>;

    /// The protocol said the answer is complete; later events are ignored.
    fn done(&self) -> bool;

    /// The body ended before [`done`](Self::done): push the closing events,
    /// or fail when the answer was cut short.
    fn closed(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), Error>;
}

/// An [`EventStream`] over an SSE response, decoded by `D`.
pub struct SseEvents<D> {
    sse: SseStream,
    decoder: D,
    /// An error met after events that were handed over first.
    failed: Option<Error>,
    over: bool,
}

impl<D: SseDecoder> SseEvents<D> {
    /// Decode `response`'s body with `decoder`.
    pub fn new(response: Response, decoder: D) -> Self {
        SseEvents {
            sse: SseStream::new(response),
            decoder,
            failed: None,
            over: false,
        }
    }
}

impl<D: SseDecoder> EventStream for SseEvents<D> {
    fn next(&mut self) -> Result<Option<Vec<StreamEvent>>, Error> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let mut out = Vec::new();
        while out.is_empty() && !self.over {
            let Some(batch) = self.sse.next_batch()? else {
                self.over = true;
                self.decoder.closed(&mut out)?;
                break;
            };
            for event in batch {
                if self.decoder.done() {
                    break;
                }
                if event.data.trim().is_empty() {
                    continue;
                }
                if let Err(e) = self.decoder.event(&event, &mut out) {
                    self.over = true;
                    if out.is_empty() {
                        return Err(e);
                    }
                    self.failed = Some(e);
                    return Ok(Some(out));
                }
            }
            self.over |= self.decoder.done();
        }
        Ok((!out.is_empty()).then_some(out))
    }
}
