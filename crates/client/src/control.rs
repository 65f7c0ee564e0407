//! The client side of a throughput test's control session: open it, learn
//! the test id, ask for Reports (Snapshot), end the test (Stop).

use crate::endpoint::Endpoint;
use crate::error::ClientError;
use crate::handshake::open_session;
use crate::sockets::{lost, recv_exact, send_all};
use stackmeter_proto::admit::Advertised;
use stackmeter_proto::control::{parse_welcome_limits, ClientRecord, Report, ServerRecord, HEAD_LEN};
use stackmeter_proto::header::SessionHeader;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Opens a control session, reads the responder's Welcome and closes the
/// session again: whether a responder is ready for a throughput test (the
/// lab's readiness probe). Returns the test id it offered.
pub fn welcome(endpoint: &Endpoint, timeout: Duration) -> Result<u32, ClientError> {
    Control::open(endpoint, timeout).map(|c| c.test_id)
}

/// Why no UDP datagram came back from `endpoint`, found by asking its TCP
/// port for a control session (after the test, outside anything timed):
/// nothing there at all, a responder that refused this client's secret
/// (or its lack of one: a responder with a secret drops unsealed
/// datagrams without a word), or a responder that answers TCP, so that
/// its UDP replies (or the requests) are lost on the way.
pub(crate) fn why_silent(endpoint: &Endpoint, timeout: Duration) -> String {
    let auth = stackmeter_proto::status::Refusal::Auth.name();
    match (Control::open(endpoint, timeout), endpoint.secret) {
        (Err(ClientError::Refused { code, .. }), None) if code == auth => {
            "; the responder there requires a shared secret (--secret-file)".into()
        }
        (Err(ClientError::Refused { code, .. }), Some(_)) if code == auth => {
            "; the responder there refused this client's secret (is it the responder's?), and drops datagrams sealed with it".into()
        }
        (Ok(_), _) => "; a stackmeter responder answers TCP at this address, so UDP is lost on the way (a firewall or NAT that passes TCP only?)".into(),
        (Err(_), _) => "; nothing answered: no stackmeter responder at this address (its TCP port did not accept a session either)".into(),
    }
}

/// An open control session.
pub(crate) struct Control {
    stream: TcpStream,
    addr: SocketAddr,
    /// The id data sessions and UDP datagrams must name.
    pub test_id: u32,
    /// The responder's limits from the Welcome (none from an older one).
    pub limits: Advertised,
    next: u32,
    /// The last record read, whole.
    last: Vec<u8>,
}

impl Control {
    /// Opens the control session and reads the Welcome.
    pub(crate) fn open(endpoint: &Endpoint, timeout: Duration) -> Result<Control, ClientError> {
        let stream = open_session(endpoint, &SessionHeader::control(), timeout)?;
        let mut c = Control {
            stream,
            addr: endpoint.addr,
            test_id: 0,
            limits: Advertised::default(),
            next: 0,
            last: Vec::new(),
        };
        match c.read_record("waiting for the welcome")? {
            ServerRecord::Welcome(id) => {
                c.test_id = id;
                c.limits = parse_welcome_limits(&c.last);
            }
            other => return Err(c.protocol(format!("expected a welcome, got {other:?}"))),
        }
        Ok(c)
    }

    /// The responder's counters now.
    pub(crate) fn snapshot(&mut self) -> Result<Report, ClientError> {
        self.next += 1;
        self.ask(ClientRecord::Snapshot(self.next), "waiting for a report")
    }

    /// Ends the test: the responder stops its sources, waits for every data
    /// session to end, and sends the final counters. `wait` bounds that.
    pub(crate) fn stop(&mut self, wait: Duration) -> Result<Report, ClientError> {
        self.next += 1;
        let _ = self.stream.set_read_timeout(Some(wait));
        self.ask(ClientRecord::Stop(self.next), "waiting for the final report")
    }

    fn ask(&mut self, rec: ClientRecord, during: &str) -> Result<Report, ClientError> {
        let id = match rec {
            ClientRecord::Snapshot(id) | ClientRecord::Stop(id) => id,
            ClientRecord::Unknown(_) => 0,
        };
        send_all(&mut self.stream, &rec.emit()).map_err(|e| lost(self.addr, "sending a control record", &e))?;
        loop {
            match self.read_record(during)? {
                ServerRecord::Report(r) if r.id == id => return Ok(r),
                // An answer to an earlier request, or a type this client
                // does not know: skip it.
                ServerRecord::Report(_) | ServerRecord::Unknown(_) => {}
                ServerRecord::Welcome(_) => return Err(self.protocol("a second welcome".into())),
            }
        }
    }

    fn read_record(&mut self, during: &str) -> Result<ServerRecord, ClientError> {
        let mut buf = [0u8; 1024];
        recv_exact(&mut self.stream, HEAD_LEN as u64, &mut buf[..HEAD_LEN]).map_err(|e| lost(self.addr, during, &e))?;
        let len = u16::from_be_bytes([buf[2], buf[3]]) as usize;
        if !(HEAD_LEN..=buf.len()).contains(&len) {
            return Err(self.protocol(format!("control record of length {len}")));
        }
        recv_exact(&mut self.stream, (len - HEAD_LEN) as u64, &mut buf[HEAD_LEN..len])
            .map_err(|e| lost(self.addr, during, &e))?;
        self.last.clear();
        self.last.extend_from_slice(&buf[..len]);
        ServerRecord::parse(&buf[..len])
            .map(|(r, _)| r)
            .map_err(|e| self.protocol(format!("bad control record ({e:?})")))
    }

    fn protocol(&self, what: String) -> ClientError {
        ClientError::Lost {
            addr: self.addr,
            what: format!("control session: {what}"),
        }
    }
}
