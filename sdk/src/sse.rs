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

/// Where body chunks come from: a host HTTP response, or (in tests) any
/// sequence of byte chunks.
pub trait ChunkSource {
    /// The next chunk, waiting for it; `None` at the end of the body.
    fn next_chunk(&self) -> Result<Option<Vec<u8>>, Error>;
}

impl ChunkSource for Response {
    fn next_chunk(&self) -> Result<Option<Vec<u8>>, Error> {
        Response::next_chunk(self).map_err(Error::from)
    }
}

/// Body chunks of a response as a `Stream`; a poll blocks in the host
/// until a chunk arrives, unless `wait` is off: then it reports `Pending`
/// instead, so events already buffered can be drained without waiting.
struct Chunks {
    response: Option<Box<dyn ChunkSource>>,
    wait: Rc<Cell<bool>>,
    /// The last host chunk, handed to the parser in pieces from `at`.
    rest: Vec<u8>,
    at: usize,
    /// Bytes since the last line end.
    open_line: usize,
    /// The start of a line whose end has not arrived yet, kept back from
    /// the parser: `eventsource-stream` rescans an unfinished line at
    /// every piece it is handed, so a long line fed chunk by chunk cost
    /// time quadratic in its length (a 4 MiB line took 6.5 s, past the
    /// guest's deadline on a loaded machine). It goes over whole, once.
    held: Vec<u8>,
}

/// Largest piece handed to the parser at once when it holds a line end.
/// `eventsource-stream` moves its unparsed buffer after every line, so
/// feeding it a whole 16 KB network chunk would copy that chunk once per
/// line; small pieces keep parsing linear. A piece without a line end
/// runs to the next one (or the chunk's end) and is held back until its
/// line ends (`Chunks::held`).
const PIECE: usize = 512;

/// Longest line of an event stream: one without an end in sight is a
/// broken or hostile server, not a model's answer.
pub const MAX_LINE_BYTES: usize = 8 << 20;

/// SSE ends a line at CR, LF or CRLF.
fn line_end(b: &u8) -> bool {
    matches!(b, b'\n' | b'\r')
}

impl Chunks {
    /// The next piece of the current chunk for the parser, or `None` when
    /// it was held back (its line goes on past the chunk).
    fn piece(&mut self) -> Result<Option<Vec<u8>>, Error> {
        let rest = &self.rest[self.at..];
        let short = rest.len().min(PIECE);
        let end = match rest[..short].iter().position(line_end) {
            Some(_) => short,
            None => rest.iter().position(line_end).map_or(rest.len(), |i| i + 1),
        };
        let piece = &rest[..end];
        self.at += end;
        let ended = piece.iter().rposition(line_end);
        match ended {
            Some(i) => self.open_line = piece.len() - i - 1,
            None => self.open_line += piece.len(),
        }
        if self.open_line > MAX_LINE_BYTES {
            self.response = None;
            self.held = Vec::new();
            return Err(Error::tool(
                "sse-line-too-long",
                format!(
                    "the server sent a line of more than {MAX_LINE_BYTES} bytes in its event stream; the response was abandoned"
                ),
            ));
        }
        if ended.is_none() {
            self.held.extend_from_slice(piece);
            return Ok(None);
        }
        let mut out = std::mem::take(&mut self.held);
        out.extend_from_slice(piece);
        Ok(Some(out))
    }
}

impl Stream for Chunks {
    type Item = Result<Vec<u8>, Error>;

    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if self.at < self.rest.len() {
                match self.piece() {
                    Ok(Some(piece)) => return Poll::Ready(Some(Ok(piece))),
                    Ok(None) => continue,
                    Err(e) => return Poll::Ready(Some(Err(e))),
                }
            }
            if !self.wait.get() {
                return Poll::Pending;
            }
            let Some(response) = self.response.as_ref() else {
                return Poll::Ready(None);
            };
            match response.next_chunk() {
                Ok(Some(chunk)) => {
                    self.rest = chunk;
                    self.at = 0;
                }
                Ok(None) => {
                    // The body ended inside a line: the parser gets what
                    // there is, as it would have piece by piece.
                    self.response = None;
                    let held = std::mem::take(&mut self.held);
                    return Poll::Ready((!held.is_empty()).then_some(Ok(held)));
                }
                Err(e) => {
                    self.response = None;
                    self.held = Vec::new();
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
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
        Self::from_source(Box::new(response))
    }

    /// Read the chunks `source` gives as `text/event-stream`.
    pub fn from_source(source: Box<dyn ChunkSource>) -> Self {
        let wait = Rc::new(Cell::new(true));
        SseStream {
            events: Chunks {
                response: Some(source),
                wait: wait.clone(),
                rest: Vec::new(),
                at: 0,
                open_line: 0,
                held: Vec::new(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cell::RefCell;
    use std::collections::VecDeque;

    /// Chunks from memory.
    struct Replay(RefCell<VecDeque<Vec<u8>>>);

    impl ChunkSource for Replay {
        fn next_chunk(&self) -> Result<Option<Vec<u8>>, Error> {
            Ok(self.0.borrow_mut().pop_front())
        }
    }

    /// Every event of `chunks`, or the error that ended them.
    fn parse(chunks: Vec<Vec<u8>>) -> Result<Vec<(String, String)>, String> {
        let mut sse = SseStream::from_source(Box::new(Replay(RefCell::new(chunks.into()))));
        let mut out = Vec::new();
        loop {
            match sse.next_batch() {
                Ok(Some(batch)) => out.extend(batch.into_iter().map(|e| (e.event, e.data))),
                Ok(None) => return Ok(out),
                Err(e) => return Err(e.code().to_string()),
            }
        }
    }

    /// A body of SSE events with arbitrary text (multi-line data, event
    /// names, comments, CRLF line ends).
    fn body() -> impl Strategy<Value = Vec<u8>> {
        let text = "[ -~é世\u{1f600}]{0,40}";
        let event = (
            prop::option::of("[a-z]{1,8}"),
            prop::collection::vec(text, 1..3),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(name, lines, comment, crlf)| {
                let nl = if crlf { "\r\n" } else { "\n" };
                let mut s = String::new();
                if comment {
                    s.push_str(": keep-alive");
                    s.push_str(nl);
                }
                if let Some(n) = name {
                    s.push_str(&format!("event: {n}{nl}"));
                }
                for l in lines {
                    s.push_str(&format!("data: {l}{nl}"));
                }
                s.push_str(nl);
                s
            });
        prop::collection::vec(event, 0..12).prop_map(|v| v.concat().into_bytes())
    }

    /// `bytes` cut at the given points (any points, inside characters too).
    fn cut(bytes: &[u8], points: &[usize]) -> Vec<Vec<u8>> {
        let mut at: Vec<usize> = points.iter().map(|p| p % (bytes.len() + 1)).collect();
        at.sort_unstable();
        at.dedup();
        let mut chunks = Vec::new();
        let mut from = 0;
        for p in at {
            chunks.push(bytes[from..p].to_vec());
            from = p;
        }
        chunks.push(bytes[from..].to_vec());
        chunks
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_chunking_gives_the_events_of_one_chunk(
            body in body(),
            points in prop::collection::vec(any::<usize>(), 0..20),
        ) {
            let whole = parse(vec![body.clone()]);
            prop_assert_eq!(parse(cut(&body, &points)), whole);
        }

        #[test]
        fn any_bytes_parse_without_panicking(
            bytes in prop::collection::vec(any::<u8>(), 0..2048),
            points in prop::collection::vec(any::<usize>(), 0..8),
        ) {
            let _ = parse(cut(&bytes, &points));
        }
    }

    #[test]
    fn an_endless_line_is_refused() {
        let chunk = vec![b'A'; 1 << 20];
        let mut chunks = vec![b"data: ".to_vec()];
        chunks.extend(std::iter::repeat_n(chunk, (MAX_LINE_BYTES >> 20) + 2));
        assert_eq!(parse(chunks), Err("sse-line-too-long".to_string()));
    }

    /// The pieces the parser is handed for `chunks`, polled as a stream.
    fn pieces(chunks: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        let mut stream = Chunks {
            response: Some(Box::new(Replay(RefCell::new(chunks.into())))),
            wait: Rc::new(Cell::new(true)),
            rest: Vec::new(),
            at: 0,
            open_line: 0,
            held: Vec::new(),
        };
        let mut cx = Context::from_waker(Waker::noop());
        let mut out = Vec::new();
        while let Poll::Ready(Some(piece)) = Pin::new(&mut stream).poll_next(&mut cx) {
            out.push(piece.expect("piece"));
        }
        out
    }

    /// A long line that arrives in many chunks reaches the parser once,
    /// whole: handed over chunk by chunk, the parser rescanned it at each
    /// (quadratic; a hostile endpoint's 4 MiB line ran past the guest's
    /// deadline).
    #[test]
    fn a_long_line_reaches_the_parser_once() {
        let mut chunks = vec![b"data: ".to_vec()];
        chunks.extend(std::iter::repeat_n(vec![b'A'; 4000], 1000));
        chunks.push(b"\n\ndata: b\n\n".to_vec());
        let got = pieces(chunks);
        assert_eq!(got.len(), 1, "{} pieces", got.len());
        assert_eq!(got[0].len(), 6 + 4000 * 1000 + 11);
        assert!(got[0].ends_with(b"A\n\ndata: b\n\n"));
    }

    /// Holding back waits for a line's end, CR included, not for more
    /// than the line: an event ended by a lone CR is handed over as it
    /// arrives, and a body that ends inside a line hands over its rest.
    #[test]
    fn a_line_is_handed_over_at_its_end_and_at_the_bodys() {
        assert_eq!(
            pieces(vec![b"data: a\r".to_vec(), b"\r".to_vec()]),
            vec![b"data: a\r".to_vec(), b"\r".to_vec()]
        );
        assert_eq!(
            pieces(vec![b"data: a".to_vec(), b"bc".to_vec()]),
            vec![b"data: abc".to_vec()]
        );
        assert_eq!(
            parse(vec![b"data: a\r\rdata: b\r\r".to_vec()]),
            Ok(vec![("message".to_string(), "a".to_string())])
        );
    }
}
