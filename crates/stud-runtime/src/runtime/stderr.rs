//! Guest stderr: kept as a short tail so a crash report can quote the
//! guest's last words (a Rust panic message), never shown otherwise.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

#[derive(Clone)]
pub struct TailBuffer {
    inner: Arc<Mutex<Vec<u8>>>,
    cap: usize,
}

impl TailBuffer {
    pub fn new(cap: usize) -> Self {
        TailBuffer {
            inner: Arc::default(),
            cap,
        }
    }

    /// The kept tail as text (lossy), trimmed.
    pub fn text(&self) -> String {
        let buf = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&buf).trim().to_string()
    }

    fn push(&self, bytes: &[u8]) {
        let mut buf = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        buf.extend_from_slice(bytes);
        if buf.len() > self.cap {
            let cut = buf.len() - self.cap;
            buf.drain(..cut);
        }
    }
}

impl IsTerminal for TailBuffer {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for TailBuffer {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for TailBuffer {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
