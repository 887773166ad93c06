//! A gRPC connection's socket that sends what one turn of the connection wrote in one write
//! (ADR 028).
//!
//! h2 flushes its socket after every DATA frame whose payload it keeps by reference (256 bytes
//! and more), so a unary reply — HEADERS, DATA, trailers — went out as two writes: the reply,
//! then 10 bytes of trailers, each a syscall, a TCP segment and a wake-up of the client. Here a
//! write is held, and the first flush after it is put off to the connection's next flush, read
//! or turn (the flush wakes the connection's task for that turn); the held bytes then go out
//! together.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::transport::server::Connected;

/// Bytes held at most before a write waits for them to go out.
pub const MAX_HELD_BYTES: usize = 64 * 1024;

/// A socket whose writes are held until a flush that was not the first since them.
#[derive(Debug)]
pub struct Coalescing<T> {
    io: T,
    held: Vec<u8>,
    /// A flush returned without sending `held`: the next flush, read or turn sends it.
    put_off: bool,
}

impl<T> Coalescing<T> {
    pub fn new(io: T) -> Self {
        Self {
            io,
            held: Vec::new(),
            put_off: false,
        }
    }
}

impl<T: AsyncWrite + Unpin> Coalescing<T> {
    /// Sends everything held.
    fn poll_send_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.held.is_empty() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.held))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.held.drain(..n);
        }
        self.put_off = false;
        Poll::Ready(Ok(()))
    }

    /// Room for more: what is held goes out first once it reaches the bound.
    fn poll_room(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.held.len() >= MAX_HELD_BYTES {
            ready!(self.poll_send_held(cx))?;
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Coalescing<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        ready!(me.poll_room(cx))?;
        me.held.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        ready!(me.poll_room(cx))?;
        let mut n = 0;
        for buf in bufs {
            me.held.extend_from_slice(buf);
            n += buf.len();
        }
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if !me.held.is_empty() && !me.put_off {
            // Whatever else this turn writes (a reply's trailers) joins it; the wake makes
            // sure a next turn comes to send it if nothing else does.
            me.put_off = true;
            cx.waker().wake_by_ref();
            return Poll::Ready(Ok(()));
        }
        ready!(me.poll_send_held(cx))?;
        Pin::new(&mut me.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        ready!(me.poll_send_held(cx))?;
        Pin::new(&mut me.io).poll_shutdown(cx)
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncRead for Coalescing<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if me.put_off {
            // A put-off flush goes out before the connection waits for the peer; if the
            // socket is full, its writability wakes the task.
            if let Poll::Ready(Err(e)) = me.poll_send_held(cx) {
                return Poll::Ready(Err(e));
            }
        }
        Pin::new(&mut me.io).poll_read(cx, buf)
    }
}

impl<T: Connected> Connected for Coalescing<T> {
    type ConnectInfo = T::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::task::Wake;

    /// The far end of the socket as the kernel sees it: each write call, in order.
    #[derive(Default, Clone)]
    struct Writes(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Writes {
        fn calls(&self) -> Vec<Vec<u8>> {
            self.0.lock().unwrap().clone()
        }
    }

    impl AsyncWrite for Writes {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.0.lock().unwrap().push(buf.to_vec());
            Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncRead for Writes {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Poll::Pending
        }
    }

    /// Counts the wake-ups a flush asks for.
    #[derive(Default)]
    struct Wakes(Mutex<usize>);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            *self.0.lock().unwrap() += 1;
        }
    }

    /// A socket over `Writes`, and a waker for its connection's task that counts wake-ups.
    fn rig() -> (Writes, Arc<Wakes>, std::task::Waker, Coalescing<Writes>) {
        let (writes, wakes) = (Writes::default(), Arc::new(Wakes::default()));
        let waker = std::task::Waker::from(wakes.clone());
        let socket = Coalescing::new(writes.clone());
        (writes, wakes, waker, socket)
    }

    fn write(s: &mut Coalescing<Writes>, cx: &mut Context<'_>, bytes: &[u8]) {
        assert!(matches!(
            Pin::new(s).poll_write(cx, bytes),
            Poll::Ready(Ok(n)) if n == bytes.len()
        ));
    }

    fn flush(s: &mut Coalescing<Writes>, cx: &mut Context<'_>) {
        assert!(matches!(Pin::new(s).poll_flush(cx), Poll::Ready(Ok(()))));
    }

    #[test]
    fn given_a_reply_and_its_trailers_flushed_apart_when_written_then_one_write_sends_both() {
        let (writes, wakes, waker, mut socket) = rig();
        let mut cx = Context::from_waker(&waker);
        write(&mut socket, &mut cx, b"headers+data");
        flush(&mut socket, &mut cx);
        assert!(writes.calls().is_empty(), "the first flush is put off");
        assert_eq!(*wakes.0.lock().unwrap(), 1, "and asks for another turn");
        write(&mut socket, &mut cx, b"trailers");
        flush(&mut socket, &mut cx);
        assert_eq!(writes.calls(), vec![b"headers+datatrailers".to_vec()]);
    }

    #[test]
    fn given_a_put_off_flush_when_the_next_turn_flushes_then_it_is_sent() {
        let (writes, wakes, waker, mut socket) = rig();
        let mut cx = Context::from_waker(&waker);
        write(&mut socket, &mut cx, b"settings ack");
        flush(&mut socket, &mut cx);
        flush(&mut socket, &mut cx);
        assert_eq!(writes.calls(), vec![b"settings ack".to_vec()]);
        // Nothing held: a flush has nothing to put off and asks for no turn.
        flush(&mut socket, &mut cx);
        assert_eq!(writes.calls().len(), 1);
        assert_eq!(*wakes.0.lock().unwrap(), 1);
    }

    #[test]
    fn given_a_put_off_flush_when_the_connection_reads_then_it_is_sent_first() {
        let (writes, _, waker, mut socket) = rig();
        let mut cx = Context::from_waker(&waker);
        write(&mut socket, &mut cx, b"window update");
        flush(&mut socket, &mut cx);
        let mut space = [0u8; 16];
        let mut buf = ReadBuf::new(&mut space);
        assert!(Pin::new(&mut socket)
            .poll_read(&mut cx, &mut buf)
            .is_pending());
        assert_eq!(writes.calls(), vec![b"window update".to_vec()]);
    }

    #[test]
    fn held_bytes_go_out_before_a_write_past_the_bound_and_at_shutdown() {
        let (writes, _, waker, mut socket) = rig();
        let mut cx = Context::from_waker(&waker);
        write(&mut socket, &mut cx, &vec![1u8; MAX_HELD_BYTES - 1]);
        write(&mut socket, &mut cx, &[2u8]);
        assert!(
            writes.calls().is_empty(),
            "one byte short of the bound is held"
        );
        write(&mut socket, &mut cx, &[3u8]);
        let calls = writes.calls();
        assert_eq!(calls.len(), 1, "at the bound, what is held goes out first");
        assert_eq!(calls[0].len(), MAX_HELD_BYTES);
        assert!(matches!(
            Pin::new(&mut socket).poll_shutdown(&mut cx),
            Poll::Ready(Ok(()))
        ));
        assert_eq!(writes.calls()[1], vec![3u8], "shutdown sends the rest");
    }
}
