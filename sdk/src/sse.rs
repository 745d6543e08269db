//! Server-sent events over a host HTTP response, parsed by the
//! `eventsource-stream` crate (which keeps partial lines and partial UTF-8
//! characters across chunk boundaries). The host delivers body chunks as
//! they arrive, so each event is handed out as soon as its blank line is
//! read.

use std::cell::Cell;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use eventsource_stream::{EventStream, EventStreamError, Eventsource};
use futures_core::Stream;

use crate::Error;
use crate::host::http::Response;

pub use eventsource_stream::Event;

mod decode;
pub use decode::{SseDecoder, SseEvents};

/// Body chunks of a response as a `Stream`; a poll blocks in the host
/// until a chunk arrives, unless `wait` is off: then it reports `Pending`
/// instead, so events already buffered can be drained without waiting.
struct Chunks {
    response: Option<Response>,
    wait: Rc<Cell<bool>>,
    /// The last host chunk, handed to the parser in pieces from `at`.
    rest: Vec<u8>,
    at: usize,
}

/// Largest piece handed to the parser at once. `eventsource-stream` moves
/// its unparsed buffer after every line, so feeding it a whole 16 KB
/// network chunk would copy that chunk once per line; small pieces keep
/// parsing linear.
const PIECE: usize = 512;

impl Chunks {
    fn piece(&mut self) -> Vec<u8> {
        let end = (self.at + PIECE).min(self.rest.len());
        let piece = self.rest[self.at..end].to_vec();
        self.at = end;
        piece
    }
}

impl Stream for Chunks {
    type Item = Result<Vec<u8>, Error>;

    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.at < self.rest.len() {
            return Poll::Ready(Some(Ok(self.piece())));
        }
        if !self.wait.get() {
            return Poll::Pending;
        }
        let Some(response) = self.response.as_ref() else {
            return Poll::Ready(None);
        };
        let next = match response.next_chunk() {
            Ok(Some(chunk)) => {
                self.rest = chunk;
                self.at = 0;
                Some(Ok(self.piece()))
            }
            Ok(None) => {
                self.response = None;
                None
            }
            Err(e) => {
                self.response = None;
                Some(Err(Error::from(e)))
            }
        };
        Poll::Ready(next)
    }
}

/// The events of an SSE response, one at a time.
pub struct SseStream {
    events: EventStream<Chunks>,
    wait: Rc<Cell<bool>>,
}

impl SseStream {
    /// Read `response`'s body as `text/event-stream`.
    pub fn new(response: Response) -> Self {
        let wait = Rc::new(Cell::new(true));
        SseStream {
            events: Chunks {
                response: Some(response),
                wait: wait.clone(),
                rest: Vec::new(),
                at: 0,
            }
            .eventsource(),
            wait,
        }
    }

    /// The next event, or `None` at the end of the body. Transport errors
    /// keep their class (a dropped connection is transient); malformed
    /// streams are protocol errors.
    pub fn next_event(&mut self) -> Result<Option<Event>, Error> {
        self.wait.set(true);
        loop {
            if let Some(next) = self.poll()? {
                return Ok(next);
            }
        }
    }

    /// The next event (waiting for it) plus every further event already
    /// received, so a provider hands the kernel one batch per network
    /// chunk instead of one call per token. `None` at the end of the body.
    pub fn next_batch(&mut self) -> Result<Option<Vec<Event>>, Error> {
        let Some(first) = self.next_event()? else {
            return Ok(None);
        };
        let mut batch = vec![first];
        self.wait.set(false);
        while let Some(Some(event)) = self.poll()? {
            batch.push(event);
        }
        self.wait.set(true);
        Ok(Some(batch))
    }

    /// One poll: `None` when the parser needs data it may not wait for.
    fn poll(&mut self) -> Result<Option<Option<Event>>, Error> {
        let mut cx = Context::from_waker(Waker::noop());
        match Pin::new(&mut self.events).poll_next(&mut cx) {
            Poll::Ready(None) => Ok(Some(None)),
            Poll::Ready(Some(Ok(event))) => Ok(Some(Some(event))),
            Poll::Ready(Some(Err(EventStreamError::Transport(e)))) => Err(e),
            Poll::Ready(Some(Err(e))) => Err(Error::transient(
                "protocol",
                format!("the event stream is malformed: {e}"),
            )),
            Poll::Pending => Ok(None),
        }
    }
}
