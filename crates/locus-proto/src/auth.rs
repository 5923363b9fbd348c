//! The cluster secret and the challenge-response handshake every connection
//! starts with. The server sends a random nonce; the client answers with the
//! keyed BLAKE3 hash of the nonce and the channel it wants, proving it holds the
//! secret without sending it. A wrong answer closes the connection unanswered.

use rand::RngCore;
use std::io::{self, Read, Write};
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const MAGIC: &[u8; 4] = b"LCS1";
const NONCE_LEN: usize = 32;
const ACCEPTED: u8 = 0xA5;
/// Said before a refused connection is closed: a connection closed without
/// it was cut (a daemon stopping or restarting), not refused.
const REFUSED: u8 = 0x5A;
/// How long a server waits for a client to prove itself.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// The kind of conversation that follows the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Channel {
    /// Pipelined request/response frames.
    Rpc = 1,
    /// Bulk file transfers with raw byte bodies.
    Transfer = 2,
    /// Messages between the ranks of a workflow run.
    Ranks = 3,
}

impl Channel {
    fn from_byte(b: u8) -> Option<Channel> {
        match b {
            1 => Some(Channel::Rpc),
            2 => Some(Channel::Transfer),
            3 => Some(Channel::Ranks),
            _ => None,
        }
    }
}

/// The shared cluster key.
#[derive(Clone)]
pub struct Secret([u8; 32]);

impl Secret {
    pub fn generate() -> Secret {
        let mut key = [0u8; 32];
        rand::thread_rng().fill_bytes(&mut key);
        Secret(key)
    }

    pub fn from_bytes(key: [u8; 32]) -> Secret {
        Secret(key)
    }

    /// Writes the key as hex to a new file readable only by its owner.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        f.write_all(blake3::Hash::from_bytes(self.0).to_hex().as_bytes())?;
        f.sync_all()
    }

    pub fn load(path: &Path) -> io::Result<Secret> {
        let text = std::fs::read_to_string(path)?;
        let hash = blake3::Hash::from_hex(text.trim()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not a cluster secret", path.display()),
            )
        })?;
        Ok(Secret(*hash.as_bytes()))
    }

    /// A token for `purpose` (hex), made from the key: whoever shows it was
    /// given it by someone who holds the key, and learns nothing of the key
    /// (a live page's URL carries one, never the key itself).
    pub fn token(&self, purpose: &str) -> String {
        blake3::keyed_hash(&self.0, purpose.as_bytes())
            .to_hex()
            .to_string()
    }

    fn answer(&self, nonce: &[u8; NONCE_LEN], channel: Channel) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(&self.0);
        h.update(nonce);
        h.update(&[channel as u8]);
        h.finalize()
    }
}

/// Server side: challenge the peer and return the channel it asked for, or an
/// error (the caller drops the connection).
pub async fn accept<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    secret: &Secret,
) -> io::Result<Channel> {
    let mut nonce = [0u8; NONCE_LEN];
    rand::thread_rng().fill_bytes(&mut nonce);
    let mut hello = Vec::with_capacity(4 + NONCE_LEN);
    hello.extend_from_slice(MAGIC);
    hello.extend_from_slice(&nonce);
    let exchange = async {
        stream.write_all(&hello).await?;
        let mut reply = [0u8; 1 + 32];
        stream.read_exact(&mut reply).await?;
        Ok::<_, io::Error>(reply)
    };
    let reply = tokio::time::timeout(HANDSHAKE_TIMEOUT, exchange)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "handshake timed out"))??;
    let mut mac = [0u8; 32];
    mac.copy_from_slice(&reply[1..]);
    // `blake3::Hash` equality is constant-time.
    let channel = Channel::from_byte(reply[0])
        .filter(|&channel| secret.answer(&nonce, channel) == blake3::Hash::from_bytes(mac));
    let Some(channel) = channel else {
        // Best effort: the peer learns it was refused, not cut off.
        let _ = stream.write_all(&[REFUSED]).await;
        return Err(refused());
    };
    stream.write_all(&[ACCEPTED]).await?;
    Ok(channel)
}

/// Client side, on a blocking stream: answer the challenge for `channel`.
pub fn connect<S: Read + Write>(
    stream: &mut S,
    secret: &Secret,
    channel: Channel,
) -> io::Result<()> {
    let mut hello = [0u8; 4 + NONCE_LEN];
    stream.read_exact(&mut hello)?;
    if &hello[..4] != MAGIC {
        return Err(not_a_daemon());
    }
    let mut nonce = [0u8; NONCE_LEN];
    nonce.copy_from_slice(&hello[4..]);
    let mut reply = Vec::with_capacity(33);
    reply.push(channel as u8);
    reply.extend_from_slice(secret.answer(&nonce, channel).as_bytes());
    stream.write_all(&reply)?;
    let mut ack = [0u8; 1];
    stream.read_exact(&mut ack)?;
    match ack[0] {
        ACCEPTED => Ok(()),
        REFUSED => Err(refused()),
        _ => Err(not_a_daemon()),
    }
}

fn not_a_daemon() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "peer is not a Locus daemon")
}

fn refused() -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        "the daemon refused the cluster secret",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn handshake(
        server_key: Secret,
        client_key: Secret,
    ) -> (io::Result<Channel>, io::Result<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            connect(&mut s, &client_key, Channel::Transfer)
        });
        let (mut s, _) = listener.accept().await.unwrap();
        let server = accept(&mut s, &server_key).await;
        drop(s);
        (server, client.join().unwrap())
    }

    #[tokio::test]
    async fn right_secret_is_accepted() {
        let key = Secret::generate();
        let (server, client) = handshake(key.clone(), key).await;
        assert_eq!(server.unwrap(), Channel::Transfer);
        client.unwrap();
    }

    #[tokio::test]
    async fn wrong_secret_is_refused() {
        let (server, client) = handshake(Secret::generate(), Secret::generate()).await;
        assert!(server.is_err());
        assert_eq!(client.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
    }

    #[tokio::test]
    async fn a_connection_cut_during_the_handshake_is_not_a_refusal() {
        // A daemon stopping (or restarting) after its challenge was read.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let key = Secret::generate();
        let client = std::thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            connect(&mut s, &key, Channel::Rpc)
        });
        let (mut s, _) = listener.accept().await.unwrap();
        let mut hello = Vec::from(&MAGIC[..]);
        hello.extend_from_slice(&[7; NONCE_LEN]);
        s.write_all(&hello).await.unwrap();
        let mut reply = [0u8; 33];
        s.read_exact(&mut reply).await.unwrap();
        drop(s);
        let e = client.join().unwrap().unwrap_err();
        assert_ne!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
    }

    #[test]
    fn secret_file_round_trips_and_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("locus-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("secret");
        let _ = std::fs::remove_file(&path);
        let key = Secret::generate();
        key.save(&path).unwrap();
        assert_eq!(Secret::load(&path).unwrap().0, key.0);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
