//! Reading one protocol frame from a peer with bounded memory and time. The 4-byte length is read first; the
//! body is then read as its bytes arrive, the buffer growing by at most [`CHUNK_BYTES`] ahead of them, so a
//! declared length reserves nothing by itself (it is still refused above the frame limit). Waiting for a frame
//! to begin is bounded by the idle timeout, if any; once its first byte has arrived, the whole frame must
//! arrive within the frame timeout. Between frames the buffer keeps at most one chunk, so a connection that
//! once sent a large frame does not go on holding its size.

use std::time::Duration;

use ferry_core::protocol::LENGTH_BYTES;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::{timeout, timeout_at, Instant};

/// Most bytes a frame's buffer is grown by ahead of what has arrived, and most it keeps between frames.
pub const CHUNK_BYTES: usize = 64 << 10;

/// What a frame may take.
#[derive(Debug, Clone, Copy)]
pub struct FrameLimits {
    /// Largest frame accepted (its declared length).
    pub bytes_max: usize,
    /// Longest wait for the first byte of a frame; None: no limit.
    pub idle: Option<Duration>,
    /// Longest time from a frame's first byte to its last.
    pub frame: Duration,
}

/// How a frame read ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// A whole frame (without its length) is in the buffer.
    Frame,
    /// The peer closed the connection between frames.
    Closed,
    /// No frame began within the idle timeout.
    Idle,
    /// The frame's declared length is above the limit; none of its body was read.
    TooLarge { declared: usize },
    /// The frame began but was not whole within the frame timeout.
    Stalled { declared: Option<usize>, received: usize },
}

/// Reads the next frame's body into `buf` (emptied first). A connection closed inside a frame is an
/// `UnexpectedEof` error.
pub async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    limits: FrameLimits,
) -> std::io::Result<Next> {
    buf.clear();
    buf.shrink_to(CHUNK_BYTES);
    let mut len = [0u8; LENGTH_BYTES];
    let first = match limits.idle {
        Some(idle) => match timeout(idle, reader.read(&mut len)).await {
            Ok(read) => read?,
            Err(_) => return Ok(Next::Idle),
        },
        None => reader.read(&mut len).await?,
    };
    if first == 0 {
        return Ok(Next::Closed);
    }
    let deadline = Instant::now() + limits.frame;
    if timeout_at(deadline, reader.read_exact(&mut len[first..])).await.is_err() {
        return Ok(Next::Stalled { declared: None, received: 0 });
    }
    let declared = u32::from_le_bytes(len) as usize;
    if declared > limits.bytes_max {
        return Ok(Next::TooLarge { declared });
    }
    match timeout_at(deadline, read_body(reader, buf, declared)).await {
        Ok(read) => read.map(|()| Next::Frame),
        Err(_) => Ok(Next::Stalled { declared: Some(declared), received: buf.len() }),
    }
}

/// Appends `len` bytes to `buf` as they arrive. Cancel-safe: `buf` holds exactly the bytes received so far.
async fn read_body<R: AsyncRead + Unpin>(reader: &mut R, buf: &mut Vec<u8>, len: usize) -> std::io::Result<()> {
    while buf.len() < len {
        let missing = len - buf.len();
        if buf.capacity() == buf.len() {
            buf.reserve(missing.min(CHUNK_BYTES));
        }
        let read = (&mut *reader).take(missing as u64).read_buf(buf).await?;
        if read == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("the connection closed inside a frame of {len} bytes ({} arrived)", buf.len()),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    const LIMITS: FrameLimits =
        FrameLimits { bytes_max: 4 << 20, idle: Some(Duration::from_secs(300)), frame: Duration::from_secs(30) };

    fn length(len: usize) -> [u8; LENGTH_BYTES] {
        (len as u32).to_le_bytes()
    }

    #[tokio::test]
    async fn a_frame_is_read_whole_and_the_next_one_after_it() {
        let (mut client, mut server) = tokio::io::duplex(1 << 20);
        let body = vec![7u8; 200_000];
        for part in [&length(body.len())[..], &body, &length(3), b"abc"] {
            client.write_all(part).await.unwrap();
        }
        drop(client);
        let mut buf = Vec::new();
        assert_eq!(read_frame(&mut server, &mut buf, LIMITS).await.unwrap(), Next::Frame);
        assert_eq!(buf, body);
        assert_eq!(read_frame(&mut server, &mut buf, LIMITS).await.unwrap(), Next::Frame);
        assert_eq!(buf, b"abc");
        assert!(buf.capacity() <= CHUNK_BYTES, "the large frame's buffer was let go: {}", buf.capacity());
        assert_eq!(read_frame(&mut server, &mut buf, LIMITS).await.unwrap(), Next::Closed);
    }

    /// A client declares a frame just under the limit and sends 10 bytes of it: the buffer holds one chunk at
    /// most, never the declared length.
    #[tokio::test(start_paused = true)]
    async fn a_declared_length_reserves_nothing_before_its_bytes_arrive() {
        let (mut client, mut server) = tokio::io::duplex(1 << 20);
        client.write_all(&length(LIMITS.bytes_max)).await.unwrap();
        client.write_all(&[1u8; 10]).await.unwrap();
        let mut buf = Vec::new();
        let next = read_frame(&mut server, &mut buf, LIMITS).await.unwrap();
        assert_eq!(next, Next::Stalled { declared: Some(LIMITS.bytes_max), received: 10 });
        assert!(buf.capacity() <= CHUNK_BYTES, "capacity {} for 10 bytes received", buf.capacity());
        drop(client);
    }

    #[tokio::test(start_paused = true)]
    async fn a_frame_over_the_limit_is_refused_before_its_body_is_read() {
        let (mut client, mut server) = tokio::io::duplex(1024);
        client.write_all(&length(LIMITS.bytes_max + 1)).await.unwrap();
        let mut buf = Vec::new();
        let next = read_frame(&mut server, &mut buf, LIMITS).await.unwrap();
        assert_eq!(next, Next::TooLarge { declared: LIMITS.bytes_max + 1 });
        assert_eq!(buf.capacity(), 0);
    }

    /// Silence before a frame begins ends at the idle timeout (tokio's paused clock: no real waiting).
    #[tokio::test(start_paused = true)]
    async fn a_silent_peer_is_idle_after_the_idle_timeout_and_not_before() {
        let (client, mut server) = tokio::io::duplex(1024);
        let started = Instant::now();
        let mut buf = Vec::new();
        assert_eq!(read_frame(&mut server, &mut buf, LIMITS).await.unwrap(), Next::Idle);
        assert_eq!(started.elapsed(), LIMITS.idle.unwrap());
        drop(client);
    }

    #[tokio::test(start_paused = true)]
    async fn without_an_idle_timeout_a_silent_peer_is_waited_for() {
        let (client, mut server) = tokio::io::duplex(1024);
        let limits = FrameLimits { idle: None, ..LIMITS };
        let mut buf = Vec::new();
        let waited = timeout(Duration::from_secs(3600), read_frame(&mut server, &mut buf, limits)).await;
        assert!(waited.is_err(), "still waiting after an hour: {waited:?}");
        drop(client);
    }

    /// Once a frame has begun — here two bytes of its length — the rest must arrive within the frame timeout.
    #[tokio::test(start_paused = true)]
    async fn a_half_sent_frame_stalls_after_the_frame_timeout() {
        let (mut client, mut server) = tokio::io::duplex(1024);
        client.write_all(&length(100)[..2]).await.unwrap();
        let mut buf = Vec::new();
        let started = Instant::now();
        let next = read_frame(&mut server, &mut buf, LIMITS).await.unwrap();
        assert_eq!(next, Next::Stalled { declared: None, received: 0 });
        assert_eq!(started.elapsed(), LIMITS.frame);

        let (mut client, mut server) = tokio::io::duplex(1024);
        client.write_all(&length(100)).await.unwrap();
        client.write_all(&[0u8; 60]).await.unwrap();
        let next = read_frame(&mut server, &mut buf, LIMITS).await.unwrap();
        assert_eq!(next, Next::Stalled { declared: Some(100), received: 60 });
    }

    #[tokio::test]
    async fn a_connection_closed_inside_a_frame_is_an_error() {
        let (mut client, mut server) = tokio::io::duplex(1024);
        client.write_all(&length(100)).await.unwrap();
        client.write_all(&[0u8; 60]).await.unwrap();
        drop(client);
        let err = read_frame(&mut server, &mut Vec::new(), LIMITS).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
        assert!(err.to_string().contains("60 arrived"), "{err}");
    }
}
