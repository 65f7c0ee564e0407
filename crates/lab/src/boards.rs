//! The lab's boards, one row each: every stack `lab up` can start, with
//! its label, the word of `lab up` that starts it, its device, subnet and
//! MAC, its image and the command that builds it, and the targets it
//! offers. Every device name and address of the lab is in this file and
//! nowhere else; the groups `lab up` takes, their help, `lab boards` and
//! the build's own copy of the addresses (`c-responder/boards.mk`,
//! generated from this table and checked by a test) are derived from it.
//!
//! docs/lab.md, "Adding a board", walks through a new row.

use std::net::{Ipv4Addr, SocketAddr};

/// The port every lab responder listens on (the protocol's default).
pub const PORT: u16 = 24680;

/// A board's link to the host: a TAP device (or, for `lwip-xdp`, a veth
/// pair whose other end is the device's name and `x`) in the subnet
/// 198.18.N.0/24 (from the benchmarking range 198.18.0.0/15), the host at
/// `.1` and the board at `.2`; the MAC its NIC gets, when the lab sets
/// one (the host's neighbour entry for it is static, so the first probe
/// needs no ARP round).
#[derive(Debug, PartialEq, Eq)]
pub struct Link {
    /// The host's device.
    pub device: &'static str,
    /// N of 198.18.N.0/24.
    pub subnet: u8,
    /// The board's MAC, where the lab gives one.
    pub mac: Option<&'static str>,
}

impl Link {
    /// The host's address on it.
    pub fn host(&self) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, self.subnet, 1)
    }

    /// The board's address.
    pub fn board(&self) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, self.subnet, 2)
    }

    /// The subnet, as `ip` writes it.
    pub fn net(&self) -> String {
        format!("198.18.{}.0/24", self.subnet)
    }
}

/// How a board's responder runs, and so which of the crate's starters
/// `up` hands its row to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runs {
    /// The C responder on this host's kernel stack, on loopback
    /// (`linux.rs`).
    Kernel,
    /// A responder program on a user-space stack on a TAP device of its
    /// own (`linux.rs`); `Smoltcp` is this binary's `lab serve-smoltcp`.
    Tap(TapStack),
    /// lwIP on an AF_XDP socket on a veth pair (`linux.rs`).
    Xdp,
    /// A system booted in QEMU on a TAP device of its own (`qemu.rs`,
    /// with the machine's own file for its image).
    Qemu(System),
    /// The file server the proxies stand in front of: this binary's
    /// `serve` on loopback, with the proxy write-up's files
    /// (`proxies.rs`).
    Files,
    /// A TCP proxy on loopback in front of the file server (`proxies.rs`),
    /// its program under the proxies' folder (`make -C proxies`).
    Proxy(Proxy),
}

/// The proxies of the proxy write-up, and ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proxy {
    /// SolidFrame's relay on `solid::frame::aio`.
    Solidframe,
    /// The write-up's boost::asio proxy of 2010.
    Asio2010,
    /// Our boost::asio proxy, designed as the relay is.
    Asio,
}

impl Proxy {
    /// Its command line to listen on `listen` and forward to `to`.
    pub fn args(self, listen: SocketAddr, to: SocketAddr) -> Vec<String> {
        match self {
            Proxy::Solidframe => vec![
                "-a".into(),
                listen.ip().to_string(),
                "-l".into(),
                listen.port().to_string(),
                "-c".into(),
                to.to_string(),
            ],
            Proxy::Asio2010 => vec![listen.port().to_string(), to.ip().to_string(), to.port().to_string()],
            Proxy::Asio => vec![
                "--listen".into(),
                listen.to_string(),
                "--forward".into(),
                to.to_string(),
            ],
        }
    }
}

/// The user-space stacks on TAP devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TapStack {
    /// lwIP's raw callback API (the in-stack module).
    LwipRaw,
    /// lwIP's sockets API (the application).
    LwipSock,
    /// smoltcp with the Rust protocol core.
    Smoltcp,
}

/// The systems booted in QEMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum System {
    /// A firmware for QEMU's lm3s6965evb (`mcu.rs`): its address comes
    /// from the lab, in its provisioning block.
    Firmware,
    /// Embox on QEMU's vexpress-a9 (`a9.rs`): its address is built into
    /// the image (`boards.mk`), and checked against this table.
    Embox,
    /// Debian's Linux on QEMU's vexpress-a9 (`a9.rs`): the address on its
    /// kernel command line.
    LinuxA9,
    /// Apache NuttX on QEMU's virt (`virt.rs`): its address is built into
    /// the image (`boards.mk`), and checked against this table.
    Nuttx,
    /// Debian's Linux on QEMU's virt (`virt.rs`): the address on its
    /// kernel command line.
    LinuxVirt,
}

impl System {
    /// Whether the image holds the board's address (built from
    /// `c-responder/boards.mk`), rather than the lab giving it at boot.
    pub fn address_built_in(self) -> bool {
        match self {
            System::Embox | System::Nuttx => true,
            System::Firmware | System::LinuxA9 | System::LinuxVirt => false,
        }
    }
}

/// One board of the lab.
#[derive(Debug, PartialEq, Eq)]
pub struct Board {
    /// Its label: the first target's, and its log's and console's name.
    pub label: &'static str,
    /// The word of `lab up` that starts it (several boards may share one).
    pub group: &'static str,
    /// What it is, in a few words (help, `lab boards`, boot notes).
    pub what: &'static str,
    /// Its link to the host; none for the kernel's own stack.
    pub link: Option<Link>,
    /// Its program or image, under the binaries' folder (a proxy's under
    /// the proxies' folder); empty: this binary (smoltcp, the file server).
    pub image: &'static str,
    /// The command that builds it.
    pub make: &'static str,
    /// The targets it offers: label and port (`LABEL=ADDR:PORT`).
    pub targets: &'static [(&'static str, u16)],
    /// How it runs.
    pub runs: Runs,
}

impl Board {
    /// Its program or image, found under the binaries' folder `dir` (a
    /// proxy's under the proxies' folder); none for this binary.
    pub fn path(&self, dir: &std::path::Path) -> Option<std::path::PathBuf> {
        match (self.image, self.runs) {
            ("", _) => None,
            (image, Runs::Proxy(_)) => Some(proxies_dir().join(image)),
            (image, _) => Some(dir.join(image)),
        }
    }

    /// The address of its first target.
    pub fn addr(&self) -> SocketAddr {
        let port = self.targets.first().map_or(PORT, |t| t.1);
        match &self.link {
            Some(l) => SocketAddr::from((l.board(), port)),
            None => SocketAddr::from(([127, 0, 0, 1], port)),
        }
    }

    /// The link, for a board that has one (a row without one has nothing
    /// to create).
    pub(crate) fn link(&self) -> &Link {
        static NONE: Link = Link {
            device: "",
            subnet: 0,
            mac: None,
        };
        self.link.as_ref().unwrap_or(&NONE)
    }
}

/// Every board, in the order `up` starts them and `lab boards` lists them.
pub const BOARDS: [Board; 15] = [
    Board {
        label: "kernel-c",
        group: "linux",
        what: "the C responder on this host's kernel stack",
        link: None,
        image: "stackmeter-responder",
        make: "make -C c-responder",
        targets: &[("kernel-c", 24690)],
        runs: Runs::Kernel,
    },
    Board {
        label: "lwip-raw",
        group: "linux",
        what: "lwIP's raw API responder (the in-stack module) on TAP",
        link: Some(Link {
            device: "smlab1",
            subnet: 1,
            mac: None,
        }),
        image: "lwip-raw",
        make: "make -C c-responder lwip",
        targets: &[("lwip-raw", PORT)],
        runs: Runs::Tap(TapStack::LwipRaw),
    },
    Board {
        label: "lwip-sock",
        group: "linux",
        what: "lwIP's sockets API responder (the application) on TAP",
        link: Some(Link {
            device: "smlab2",
            subnet: 2,
            mac: None,
        }),
        image: "lwip-sock",
        make: "make -C c-responder lwip",
        targets: &[("lwip-sock", PORT)],
        runs: Runs::Tap(TapStack::LwipSock),
    },
    Board {
        label: "smoltcp",
        group: "linux",
        what: "smoltcp with the Rust protocol core on TAP (this binary)",
        link: Some(Link {
            device: "smlab4",
            subnet: 4,
            mac: None,
        }),
        image: "",
        make: "cargo build (it is this binary)",
        targets: &[("smoltcp", PORT)],
        runs: Runs::Tap(TapStack::Smoltcp),
    },
    Board {
        label: "lwip-xdp",
        group: "linux",
        what: "lwIP's raw API responder on an AF_XDP socket on a veth pair",
        link: Some(Link {
            device: "smlab5",
            subnet: 5,
            mac: None,
        }),
        image: "lwip-xdp",
        make: "make -C c-responder xdp",
        targets: &[("lwip-xdp", PORT)],
        runs: Runs::Xdp,
    },
    Board {
        label: "mcu",
        group: "mcu",
        what: "the C responder's firmware (lwIP) on an emulated Cortex-M3 (QEMU lm3s6965evb)",
        link: Some(Link {
            device: "smlab3",
            subnet: 16,
            mac: Some("02:53:4d:00:00:03"),
        }),
        image: "mcu/build/stackmeter-mcu.elf",
        make: "make -C c-responder mcu",
        targets: &[("mcu", PORT)],
        runs: Runs::Qemu(System::Firmware),
    },
    Board {
        label: "mcu-smoltcp",
        group: "mcu-smoltcp",
        what: "the Rust protocol core on smoltcp as firmware for the same Cortex-M3",
        link: Some(Link {
            device: "smlab6",
            subnet: 17,
            mac: Some("02:53:4d:00:00:06"),
        }),
        image: "mcu/build/stackmeter-mcu-smoltcp.elf",
        make: "make -C c-responder mcu-smoltcp",
        targets: &[("mcu-smoltcp", PORT)],
        runs: Runs::Qemu(System::Firmware),
    },
    Board {
        label: "embox",
        group: "embox",
        what: "Embox RTOS with the C responder on an emulated Cortex-A9 (QEMU vexpress-a9)",
        link: Some(Link {
            device: "smlab7",
            subnet: 18,
            mac: Some("02:53:4d:00:00:07"),
        }),
        image: "a9/build/stackmeter-embox.elf",
        make: "STACKMETER_EMBOX_SRC=... make -C c-responder embox",
        targets: &[("embox", PORT)],
        runs: Runs::Qemu(System::Embox),
    },
    Board {
        label: "linux-a9",
        group: "linux-a9",
        what: "Linux with the C responder on the same Cortex-A9 (linux-a9; linux-a9-rt under SCHED_FIFO)",
        link: Some(Link {
            device: "smlab8",
            subnet: 19,
            mac: Some("02:53:4d:00:00:08"),
        }),
        image: "a9/build/linux-a9/initramfs.gz",
        make: "make -C c-responder linux-a9",
        targets: &[("linux-a9", PORT), ("linux-a9-rt", PORT + 1)],
        runs: Runs::Qemu(System::LinuxA9),
    },
    Board {
        label: "nuttx",
        group: "nuttx",
        what: "Apache NuttX with the C responder on an emulated Cortex-A7 (QEMU virt, virtio-net)",
        link: Some(Link {
            device: "smlab9",
            subnet: 20,
            mac: Some("02:53:4d:00:00:09"),
        }),
        image: "virt/build/stackmeter-nuttx.elf",
        make: "STACKMETER_NUTTX_SRC=... make -C c-responder nuttx",
        targets: &[("nuttx", PORT)],
        runs: Runs::Qemu(System::Nuttx),
    },
    Board {
        label: "linux-virt",
        group: "linux-virt",
        what: "Linux with the C responder on the same Cortex-A7 (linux-virt; linux-virt-rt under SCHED_FIFO)",
        link: Some(Link {
            device: "smlab10",
            subnet: 21,
            mac: Some("02:53:4d:00:00:0a"),
        }),
        image: "virt/build/linux-virt/initramfs.gz",
        make: "make -C c-responder linux-virt",
        targets: &[("linux-virt", PORT), ("linux-virt-rt", PORT + 1)],
        runs: Runs::Qemu(System::LinuxVirt),
    },
    Board {
        label: "files",
        group: "files",
        what:
            "the file server the proxies stand in front of: serve with the proxy write-up's 10 files, 4 KiB to 8.6 MiB",
        link: None,
        image: "",
        make: "cargo build (it is this binary)",
        targets: &[("direct", 24700)],
        runs: Runs::Files,
    },
    Board {
        label: "solidframe",
        group: "solidframe",
        what: "SolidFrame's aio relay (12.3) in front of the file server",
        link: None,
        image: "solidframe",
        make: "STACKMETER_SOLIDFRAME_SRC=... make -C proxies solidframe",
        targets: &[("solidframe", 24701)],
        runs: Runs::Proxy(Proxy::Solidframe),
    },
    Board {
        label: "asio-2010",
        group: "asio-2010",
        what: "the proxy write-up's boost::asio proxy of 2010 in front of the file server",
        link: None,
        image: "asio-2010",
        make: "STACKMETER_ASIO_2010_SRC=... make -C proxies asio-2010",
        targets: &[("asio-2010", 24702)],
        runs: Runs::Proxy(Proxy::Asio2010),
    },
    Board {
        label: "asio",
        group: "asio",
        what: "our boost::asio proxy, designed as the relay is, in front of the file server",
        link: None,
        image: "asio",
        make: "make -C proxies asio",
        targets: &[("asio", 24703)],
        runs: Runs::Proxy(Proxy::Asio),
    },
];

/// The proxies' programs: `$STACKMETER_PROXIES_DIR`, else `proxies/build`
/// of the source tree this binary was built from (`make -C proxies`).
pub fn proxies_dir() -> std::path::PathBuf {
    std::env::var_os("STACKMETER_PROXIES_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../proxies/build")))
}

/// The word of `lab up` that starts every stack and board that is built
/// (the proxy race is started by its own words).
pub const ALL: &str = "all";

/// The words `lab up` takes, in the table's order, then `all`; each with
/// its help line: what its board is, or the labels of its boards.
pub fn groups() -> Vec<(&'static str, String)> {
    let mut words: Vec<&'static str> = Vec::new();
    for b in &BOARDS {
        if !words.contains(&b.group) {
            words.push(b.group);
        }
    }
    let mut out: Vec<(&'static str, String)> = words
        .into_iter()
        .map(|w| {
            let of: Vec<&Board> = BOARDS.iter().filter(|b| b.group == w).collect();
            let help = match of[..] {
                [one] => one.what.to_string(),
                _ => of.iter().map(|b| b.label).collect::<Vec<_>>().join(", "),
            };
            (w, help)
        })
        .collect();
    out.push((
        ALL,
        "every stack and board above that is built (not the proxy race)".into(),
    ));
    out
}

/// The boards `word` starts, and whether each must come up (a board named
/// by a word of its own must; `all` and the words of several boards go on
/// without those not built); none for a word not in the table.
pub fn boards_of(word: &str) -> Option<Vec<(&'static Board, bool)>> {
    if word == ALL {
        let stacks = BOARDS
            .iter()
            .filter(|b| !matches!(b.runs, Runs::Files | Runs::Proxy(_)));
        return Some(stacks.map(|b| (b, false)).collect());
    }
    let of: Vec<&Board> = BOARDS.iter().filter(|b| b.group == word).collect();
    let alone = of.len() == 1;
    (!of.is_empty()).then(|| of.into_iter().map(|b| (b, alone)).collect())
}

/// The addresses the image builds take (`c-responder/boards.mk`): for each
/// board whose address is built into its image, `NAME_IP`, `NAME_GW` and
/// `NAME_MAC` (NAME its label in capitals, `-` as `_`).
pub fn make_fragment() -> String {
    let mut s = String::from(
        "# The addresses built into the lab's images: generated from the lab's board\n\
         # table (crates/lab/src/boards.rs) by `stackmeter lab boards --make`, and checked\n\
         # against it by a test; change the table, then regenerate this file.\n",
    );
    for b in BOARDS
        .iter()
        .filter(|b| matches!(b.runs, Runs::Qemu(s) if s.address_built_in()))
    {
        let l = b.link();
        let name = b.label.to_uppercase().replace('-', "_");
        s += &format!(
            "{name}_IP ?= {}\n{name}_GW ?= {}\n{name}_MAC ?= {}\n",
            l.board(),
            l.host(),
            l.mac.unwrap_or("")
        );
    }
    s
}

/// `lab boards`: the table, a line per board: label, `lab up` word,
/// device, the board's address, whether its image is built under `dir`
/// (or the command that builds it), what it is.
pub fn table(dir: &std::path::Path) -> String {
    let mut s = format!(
        "{:<12} {:<12} {:<8} {:<22} {:<10} {}\n",
        "board", "lab up", "device", "address", "built", "what"
    );
    for b in &BOARDS {
        let built = b.path(dir).is_none_or(|p| p.is_file());
        s += &format!(
            "{:<12} {:<12} {:<8} {:<22} {:<10} {}{}\n",
            b.label,
            b.group,
            b.link.as_ref().map_or("lo", |l| l.device),
            b.addr().to_string(),
            if built { "yes" } else { "no" },
            b.what,
            if built {
                String::new()
            } else {
                format!(" (build: {})", b.make)
            }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Labels, devices, subnets and MACs are each unique: two rows never
    /// share a device or a subnet.
    #[test]
    fn rows_do_not_collide() {
        for (i, a) in BOARDS.iter().enumerate() {
            for b in &BOARDS[i + 1..] {
                assert_ne!(a.label, b.label);
                if let (Some(x), Some(y)) = (&a.link, &b.link) {
                    assert_ne!(x.device, y.device, "{} and {}", a.label, b.label);
                    assert_ne!(x.subnet, y.subnet, "{} and {}", a.label, b.label);
                    assert!(x.mac.is_none() || x.mac != y.mac, "{} and {}", a.label, b.label);
                }
            }
        }
        // QEMU gives every board's NIC the table's MAC.
        for b in BOARDS.iter().filter(|b| matches!(b.runs, Runs::Qemu(_))) {
            assert!(b.link.as_ref().and_then(|l| l.mac).is_some(), "{}", b.label);
        }
        // Device names fit the kernel's 15 characters, with the veth's `x`.
        assert!(BOARDS
            .iter()
            .filter_map(|b| b.link.as_ref())
            .all(|l| l.device.len() < 15));
    }

    /// Every word of `lab up` starts at least one board, a word of its own
    /// board requires it, `all` requires none.
    #[test]
    fn every_word_starts_boards() {
        for (g, help) in groups() {
            let of = boards_of(g).unwrap_or_else(|| panic!("{g}"));
            assert!(!of.is_empty() && !help.is_empty(), "{g}");
            if g != ALL && of.len() == 1 {
                assert!(of[0].1, "{g} alone must come up");
            }
        }
        assert!(boards_of(ALL).unwrap().iter().all(|(_, must)| !must));
        assert_eq!(boards_of("nothing"), None);
        let linux = groups().into_iter().find(|(g, _)| *g == "linux").unwrap().1;
        assert_eq!(linux, "kernel-c, lwip-raw, lwip-sock, smoltcp, lwip-xdp");
    }

    /// The build's copy of the addresses is this table's
    /// (`c-responder/boards.mk`).
    #[test]
    fn the_builds_addresses_are_the_tables() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../c-responder/boards.mk");
        let file = std::fs::read_to_string(path).unwrap();
        assert_eq!(
            file,
            make_fragment(),
            "c-responder/boards.mk differs from the table: run `stackmeter lab boards --make > c-responder/boards.mk`"
        );
        assert!(file.contains("EMBOX_IP ?= 198.18.18.2\n"), "{file}");
    }
}
