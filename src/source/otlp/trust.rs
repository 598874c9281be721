//! Who may feed the receiver. The rule is the Unix-socket `listen`'s (`socket::check_peer`): only
//! our own processes. A TCP peer has no `SO_PEERCRED`, but on loopback the kernel's socket table
//! names the owner of the other end: `/proc/net/tcp` (or `tcp6`) lists the peer's socket with its
//! local address equal to our peer address, and its uid. Anyone else (another local user, another
//! machine) must present the bearer token kept in a private file of ours (issue 22 item 5: uid
//! 65534 fed root's monitor 1e9 tokens and $99,999, and they were recorded).

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, BufRead as _, BufReader, Read as _, Write as _};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use hyper::header::{AUTHORIZATION, HeaderMap};

use crate::wire::Clean;

/// Bytes of randomness in a token (shown as twice as many hex digits).
const TOKEN_BYTES: usize = 32;

fn our_uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// Whether the process at the other end of an accepted loopback connection runs as us. Anything
/// unknown (not loopback, not in the table, the table unreadable) is not.
pub fn peer_is_owner(local: SocketAddr, peer: SocketAddr) -> bool {
    peer.ip().is_loopback() && peer_uid(local, peer).ok().flatten() == Some(our_uid())
}

/// `[::ffff:127.0.0.1]` is `127.0.0.1`, and listed in `/proc/net/tcp`, not `tcp6`.
fn unmapped(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, |v4| SocketAddr::new(IpAddr::V4(v4), addr.port())),
        IpAddr::V4(_) => addr,
    }
}

/// The uid owning the peer's end of the connection `local` ← `peer`, from the socket table.
pub fn peer_uid(local: SocketAddr, peer: SocketAddr) -> io::Result<Option<u32>> {
    let (local, peer) = (unmapped(local), unmapped(peer));
    let table = if peer.is_ipv4() { "/proc/net/tcp" } else { "/proc/net/tcp6" };
    let mut lines = BufReader::new(File::open(table)?).lines();
    lines.next().transpose()?;
    for line in lines {
        if let Some(uid) = entry_uid(&line?, peer, local) {
            return Ok(Some(uid));
        }
    }
    Ok(None)
}

/// `sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid …`: the uid of the
/// socket whose local end is `local` and remote end `remote`.
fn entry_uid(line: &str, local: SocketAddr, remote: SocketAddr) -> Option<u32> {
    let mut fields = line.split_whitespace();
    let _slot = fields.next()?;
    if table_addr(fields.next()?)? != local || table_addr(fields.next()?)? != remote {
        return None;
    }
    fields.nth(4)?.parse().ok()
}

/// `0100007F:1F90`: the address as the kernel holds it in memory (32-bit words printed in host
/// order), the port in plain hex.
fn table_addr(field: &str) -> Option<SocketAddr> {
    let (addr, port) = field.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word =
        |i: usize| addr.get(i * 8..i * 8 + 8).and_then(|w| u32::from_str_radix(w, 16).ok()).map(u32::to_ne_bytes);
    let ip = match addr.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            IpAddr::V6(Ipv6Addr::from(bytes))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// The bearer token senders other than us must present.
pub struct Token {
    secret: String,
    path: PathBuf,
}

/// `$XDG_DATA_HOME/swarmtop/otlp-token`, else `~/.local/share/swarmtop/otlp-token`.
pub fn default_token_path() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME").map(PathBuf::from).filter(|p| p.is_absolute()).or_else(|| {
        std::env::var_os("HOME").map(PathBuf::from).filter(|p| p.is_absolute()).map(|h| h.join(".local/share"))
    })?;
    Some(data.join("swarmtop").join("otlp-token"))
}

fn untrusted(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, what)
}

impl Token {
    /// The token kept at `path`, or a new one written there (mode 0600, its folder 0700); true
    /// when it was made now, so that the caller shows it once. A file that is not a private file
    /// of ours is an error: whoever else can read it can feed the monitor.
    pub fn load_or_create(path: &Path) -> io::Result<(Self, bool)> {
        if let Some(parent) = path.parent() {
            DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
        }
        match fs::symlink_metadata(path) {
            Ok(meta) => Ok((Self::load(path, &meta)?, false)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Self::create(path),
            Err(e) => Err(e),
        }
    }

    fn load(path: &Path, meta: &fs::Metadata) -> io::Result<Self> {
        let shown = Clean::path(path);
        if !meta.is_file() || meta.uid() != our_uid() || meta.permissions().mode() & 0o077 != 0 {
            return Err(untrusted(format!("{shown} is not a file only we can read: remove it to make a new token")));
        }
        let mut text = String::new();
        File::open(path)?.take(1024).read_to_string(&mut text)?;
        let secret = text.trim().to_owned();
        if secret.len() < 2 * TOKEN_BYTES || !secret.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{shown} holds no token: remove it")));
        }
        Ok(Self { secret, path: path.to_owned() })
    }

    fn create(path: &Path) -> io::Result<(Self, bool)> {
        let mut random = [0u8; TOKEN_BYTES];
        File::open("/dev/urandom")?.read_exact(&mut random)?;
        let secret = super::hex::hex(&random);
        let mut file = match OpenOptions::new().write(true).create_new(true).mode(0o600).open(path) {
            Ok(f) => f,
            // Another listen made it first: use theirs.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Ok((Self::load(path, &fs::symlink_metadata(path)?)?, false));
            }
            Err(e) => return Err(e),
        };
        file.write_all(format!("{secret}\n").as_bytes())?;
        Ok((Self { secret, path: path.to_owned() }, true))
    }

    pub fn secret(&self) -> &str {
        &self.secret
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a request carries `Authorization: Bearer <token>`.
    pub fn admits(&self, headers: &HeaderMap) -> bool {
        let Some(given) = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) else { return false };
        let Some(given) = given.trim().strip_prefix("Bearer ") else { return false };
        let (a, b) = (given.trim().as_bytes(), self.secret.as_bytes());
        // Compared in time independent of where they differ.
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_table_addresses_read_as_the_kernel_writes_them() {
        let v4 = table_addr("0100007F:1F90").unwrap();
        assert_eq!(v4, "127.0.0.1:8080".parse().unwrap());
        let v6 = table_addr("00000000000000000000000001000000:10E6").unwrap();
        assert_eq!(v6, "[::1]:4326".parse().unwrap());
        assert!(table_addr("0100007F").is_none());
        assert!(table_addr("zz00007F:1F90").is_none());
    }

    #[test]
    fn the_entry_of_the_peer_s_socket_gives_its_uid() {
        let line = "   3: 0100007F:D431 0100007F:10E6 01 00000000:00000000 00:00000000 00000000 65534        0 123 1 0";
        let peer = "127.0.0.1:54321".parse().unwrap();
        let local = "127.0.0.1:4326".parse().unwrap();
        assert_eq!(entry_uid(line, peer, local), Some(65534));
        assert_eq!(entry_uid(line, local, peer), None, "our own end of the connection is not the peer's");
    }

    /// The socket table of this very process: a connection to ourselves is ours.
    #[test]
    fn a_loopback_connection_of_ours_is_the_owner_s() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_server, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        assert!(peer_is_owner(listener.local_addr().unwrap(), peer));
        assert!(!peer_is_owner(listener.local_addr().unwrap(), "127.0.0.1:1".parse().unwrap()));
    }

    #[test]
    fn a_token_is_made_private_once_then_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d/otlp-token");
        let (made, new) = Token::load_or_create(&path).unwrap();
        assert!(new);
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let (again, new) = Token::load_or_create(&path).unwrap();
        assert!(!new);
        assert_eq!(again.secret(), made.secret());
        let mut headers = HeaderMap::new();
        assert!(!made.admits(&headers));
        headers.insert(AUTHORIZATION, format!("Bearer {}", made.secret()).parse().unwrap());
        assert!(made.admits(&headers));
        headers.insert(AUTHORIZATION, "Bearer 00".parse().unwrap());
        assert!(!made.admits(&headers));
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        assert!(Token::load_or_create(&path).is_err(), "a token others can read is refused");
    }
}
