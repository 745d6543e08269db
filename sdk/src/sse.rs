//! Server-sent events over a host HTTP response, parsed by the
//! `eventsource-stream` crate (which keeps partial lines and partial UTF-8
//! characters across chunk boundaries). The host delivers body chunks as
//! they arrive, so each event is handed out as soon as its blank line is
//! read.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use eventsource_stream::{EventStream, EventStreamError, Eventsource};
use futures_core::Stream;

use crate::Error;
use crate::host::http::Response;

pub use eventsource_stream::Event;

/// Body chunks of a response as a `Stream`; each poll blocks in the host
/// until a chunk arrives, so it is always ready.
struct Chunks {
    response: Option<Response>,
}

impl Stream for Chunks {
    type Item = Result<Vec<u8>, Error>;

    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(response) = self.response.as_ref() else {
            return Poll::Ready(None);
        };
        let next = match response.next_chunk() {
            Ok(Some(chunk)) => Some(Ok(chunk)),
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
}

impl SseStream {
    /// Read `response`'s body as `text/event-stream`.
    pub fn new(response: Response) -> Self {
        SseStream {
            events: Chunks {
                response: Some(response),
            }
            .eventsource(),
        }
    }

    /// The next event, or `None` at the end of the body. Transport errors
    /// keep their class (a dropped connection is transient); malformed
    /// streams are protocol errors.
    pub fn next_event(&mut self) -> Result<Option<Event>, Error> {
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            match Pin::new(&mut self.events).poll_next(&mut cx) {
                Poll::Ready(None) => return Ok(None),
                Poll::Ready(Some(Ok(event))) => return Ok(Some(event)),
                Poll::Ready(Some(Err(EventStreamError::Transport(e)))) => return Err(e),
                Poll::Ready(Some(Err(e))) => {
                    return Err(Error::transient(
                        "protocol",
                        format!("the event stream is malformed: {e}"),
                    ));
                }
                // `Chunks` never waits, so neither does the parser; poll again.
                Poll::Pending => continue,
            }
        }
    }
}
