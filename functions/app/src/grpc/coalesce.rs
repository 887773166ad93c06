//! One write per unary reply on a plaintext (h2c) connection. h2 writes a DATA frame of 256
//! bytes or more straight from its buffer and flushes before it takes the next frame, so a
//! unary gRPC reply (HEADERS and DATA, then the trailers' HEADERS) left in two `writev`s, two
//! TCP segments and two wake-ups of the client. This adapter between the socket and h2 reads the
//! frame headers going out: a write that ends with a DATA frame which does not end its stream
//! (trailers or more data follow) is held back, and goes out with the next write, or at the
//! latest when the connection is next polled (it asks for that poll itself), before any read
//! or shutdown. Nothing is held past that poll, and at most `HOLD_MAX_BYTES`. Under TLS the
//! bytes are ciphertext by here, and the adapter passes them through untouched.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// The most a write may hold back (a DATA frame of h2's default 16 KiB maximum and change).
pub const HOLD_MAX_BYTES: usize = 20 * 1024;

/// HTTP/2 frame header length, DATA's frame type and END_STREAM's flag (RFC 9113 §4.1, §6.1).
const FRAME_HEADER: usize = 9;
const DATA: u8 = 0;
const END_STREAM: u8 = 1;

/// Where the outgoing bytes are in HTTP/2's frame sequence.
#[derive(Clone, Copy, Default, Debug)]
struct FrameCursor {
    header: [u8; FRAME_HEADER],
    /// Header bytes seen of the current frame.
    have: usize,
    /// Payload bytes still to come of the current frame.
    payload_left: usize,
    /// The frame just finished is DATA without END_STREAM.
    open_data: bool,
}

impl FrameCursor {
    fn advance(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.payload_left > 0 {
                let n = self.payload_left.min(bytes.len());
                self.payload_left -= n;
                bytes = &bytes[n..];
                continue;
            }
            let n = (FRAME_HEADER - self.have).min(bytes.len());
            self.header[self.have..self.have + n].copy_from_slice(&bytes[..n]);
            self.have += n;
            bytes = &bytes[n..];
            if self.have == FRAME_HEADER {
                let h = self.header;
                self.payload_left =
                    usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
                self.open_data = h[3] == DATA && h[4] & END_STREAM == 0;
                self.have = 0;
            }
        }
    }

    /// At a frame boundary, after a DATA frame that leaves its stream open.
    fn after_open_data(&self) -> bool {
        self.have == 0 && self.payload_left == 0 && self.open_data
    }
}

/// A connection's socket as h2 sees it (see the module's note).
pub struct CoalescingIo<T> {
    inner: T,
    /// Off under TLS: the bytes are not frames there.
    enabled: bool,
    cursor: FrameCursor,
    held: Vec<u8>,
}

impl<T> CoalescingIo<T> {
    pub fn new(inner: T, enabled: bool) -> Self {
        Self {
            inner,
            enabled,
            cursor: FrameCursor::default(),
            held: Vec::new(),
        }
    }
}

impl<T: AsyncWrite + Unpin> CoalescingIo<T> {
    /// Writes what is held; `Ready(Ok)` once nothing is.
    fn poll_release(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.held.is_empty() {
            let n = std::task::ready!(Pin::new(&mut self.inner).poll_write(cx, &self.held))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.held.drain(..n);
        }
        Poll::Ready(Ok(()))
    }

    fn write_through(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let n = std::task::ready!(Pin::new(&mut self.inner).poll_write_vectored(cx, bufs))?;
        if self.enabled {
            let mut left = n;
            for b in bufs {
                let take = left.min(b.len());
                self.cursor.advance(&b[..take]);
                left -= take;
                if left == 0 {
                    break;
                }
            }
        }
        Poll::Ready(Ok(n))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for CoalescingIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        if !me.enabled {
            return Pin::new(&mut me.inner).poll_write_vectored(cx, bufs);
        }
        if me.held.is_empty() {
            let total: usize = bufs.iter().map(|b| b.len()).sum();
            let mut after = me.cursor;
            for b in bufs {
                after.advance(b);
            }
            if after.after_open_data() && total <= HOLD_MAX_BYTES {
                for b in bufs {
                    me.held.extend_from_slice(b);
                }
                me.cursor = after;
                // The connection is polled again soon, and that poll writes what is held.
                cx.waker().wake_by_ref();
                return Poll::Ready(Ok(total));
            }
            return me.write_through(cx, bufs);
        }
        // Held bytes go first, in the same call as the new ones where they fit.
        const SLICES: usize = 8;
        let mut slices = [IoSlice::new(&[]); SLICES];
        slices[0] = IoSlice::new(&me.held);
        let count = bufs.len().min(SLICES - 1);
        slices[1..=count].copy_from_slice(&bufs[..count]);
        let n =
            std::task::ready!(Pin::new(&mut me.inner).poll_write_vectored(cx, &slices[..=count]))?;
        if n == 0 {
            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
        }
        if n <= me.held.len() {
            me.held.drain(..n);
            // None of `bufs` went yet: the caller tries again (after a wake-up if the socket is
            // full now).
            return match me.poll_release(cx) {
                Poll::Ready(Ok(())) => me.write_through(cx, bufs),
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            };
        }
        let mut written = n - me.held.len();
        me.held.clear();
        let reported = written;
        for b in bufs {
            let take = written.min(b.len());
            me.cursor.advance(&b[..take]);
            written -= take;
            if written == 0 {
                break;
            }
        }
        Poll::Ready(Ok(reported))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        // What is held waits for the next write or poll (the point of holding it); the rest is
        // the socket's.
        Pin::new(&mut me.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        std::task::ready!(me.poll_release(cx))?;
        Pin::new(&mut me.inner).poll_shutdown(cx)
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncRead for CoalescingIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        // The poll the hold asked for: out with it before waiting for the peer. A full socket
        // keeps it held (its write readiness wakes the connection).
        if let Poll::Ready(Err(e)) = me.poll_release(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut me.inner).poll_read(cx, buf)
    }
}

impl Connected for CoalescingIo<TcpStream> {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A socket that records each write call's bytes.
    #[derive(Default, Clone)]
    struct Recorder {
        writes: Arc<Mutex<Vec<Vec<u8>>>>,
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.writes.lock().unwrap().push(buf.to_vec());
            Poll::Ready(Ok(buf.len()))
        }
        fn poll_write_vectored(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let all: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            let n = all.len();
            self.writes.lock().unwrap().push(all);
            Poll::Ready(Ok(n))
        }
        fn is_write_vectored(&self) -> bool {
            true
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncRead for Recorder {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Poll::Pending
        }
    }

    fn frame(kind: u8, flags: u8, payload: usize) -> Vec<u8> {
        let mut f = vec![
            (payload >> 16) as u8,
            (payload >> 8) as u8,
            payload as u8,
            kind,
            flags,
            0,
            0,
            0,
            1,
        ];
        f.extend(std::iter::repeat_n(7u8, payload));
        f
    }

    const HEADERS: u8 = 1;
    const END_HEADERS: u8 = 4;

    fn io(enabled: bool) -> (CoalescingIo<Recorder>, Recorder) {
        let rec = Recorder::default();
        (CoalescingIo::new(rec.clone(), enabled), rec)
    }

    fn write(io: &mut CoalescingIo<Recorder>, bytes: &[u8]) -> usize {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        match Pin::new(io).poll_write(&mut cx, bytes) {
            Poll::Ready(Ok(n)) => n,
            other => panic!("write: {other:?}"),
        }
    }

    #[test]
    fn given_a_reply_when_its_data_then_its_trailers_are_written_then_they_leave_in_one_write() {
        let (mut io, rec) = io(true);
        let mut head = frame(HEADERS, END_HEADERS, 3);
        head.extend(frame(DATA, 0, 1_600));
        assert_eq!(write(&mut io, &head), head.len());
        assert!(rec.writes.lock().unwrap().is_empty(), "held");
        let trailers = frame(HEADERS, END_HEADERS | END_STREAM, 1);
        assert_eq!(write(&mut io, &trailers), trailers.len());
        let writes = rec.writes.lock().unwrap();
        assert_eq!(writes.len(), 1);
        assert_eq!(writes[0], [head, trailers].concat());
    }

    #[test]
    fn given_held_data_when_the_connection_reads_then_the_data_goes_out_first() {
        let (mut io, rec) = io(true);
        let data = frame(DATA, 0, 300);
        write(&mut io, &data);
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut space = [0u8; 16];
        let mut buf = ReadBuf::new(&mut space);
        assert!(Pin::new(&mut io).poll_read(&mut cx, &mut buf).is_pending());
        assert_eq!(*rec.writes.lock().unwrap(), vec![data]);
    }

    #[test]
    fn given_held_data_when_the_connection_shuts_down_then_the_data_goes_out() {
        let (mut io, rec) = io(true);
        let data = frame(DATA, 0, 10);
        write(&mut io, &data);
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(Pin::new(&mut io).poll_shutdown(&mut cx).is_ready());
        assert_eq!(*rec.writes.lock().unwrap(), vec![data]);
    }

    #[test]
    fn frames_that_end_a_stream_or_are_not_data_are_written_at_once() {
        let (mut io, rec) = io(true);
        let last = frame(DATA, END_STREAM, 500);
        let headers = frame(HEADERS, END_HEADERS, 20);
        write(&mut io, &last);
        write(&mut io, &headers);
        assert_eq!(*rec.writes.lock().unwrap(), vec![last, headers]);
    }

    #[test]
    fn a_write_split_inside_a_frame_header_is_followed() {
        let (mut io, rec) = io(true);
        let data = frame(DATA, 0, 40);
        write(&mut io, &data[..4]);
        assert_eq!(
            rec.writes.lock().unwrap().len(),
            1,
            "not at a frame boundary: written"
        );
        write(&mut io, &data[4..]);
        assert_eq!(rec.writes.lock().unwrap().len(), 1, "the frame's end: held");
    }

    #[test]
    fn the_hold_limit_at_its_boundary_and_one_past_it() {
        let (mut io, rec) = io(true);
        let at = frame(DATA, 0, HOLD_MAX_BYTES - FRAME_HEADER);
        write(&mut io, &at);
        assert!(rec.writes.lock().unwrap().is_empty(), "at the limit: held");
        let (mut io, rec) = self::io(true);
        let past = frame(DATA, 0, HOLD_MAX_BYTES - FRAME_HEADER + 1);
        write(&mut io, &past);
        assert_eq!(rec.writes.lock().unwrap().len(), 1, "one past: written");
    }

    #[test]
    fn disabled_it_passes_every_write_through() {
        let (mut io, rec) = io(false);
        let data = frame(DATA, 0, 300);
        write(&mut io, &data);
        assert_eq!(*rec.writes.lock().unwrap(), vec![data]);
    }
}
