//! Which file system a store's folder is on, so that a store SQLite cannot
//! keep safe is refused before anything is written to it.
//!
//! A store is opened in WAL mode, and WAL keeps its index in a `-shm` file
//! that every connection maps into memory: it works only for processes on
//! one host, and its locks are POSIX record locks, which network file
//! systems implement partly, differently, or not at all (SQLite's "Write-Ahead
//! Logging", "How To Corrupt An SQLite Database File" 2.1). On NFS, SMB/CIFS,
//! sshfs and their kind a store would seem to work and then lose or mangle
//! runs, so opening one there is an error that names the file system and
//! says what to do instead (a local folder, or a PostgreSQL store for many
//! hosts). The file system is read from `/proc/self/mountinfo` (the mount
//! that holds the folder: the longest mount point that is a prefix of the
//! folder's real path), not guessed from the path.

use std::path::{Path, PathBuf};

/// File system types (as `/proc/self/mountinfo` names them) a store must
/// not be kept on: network and cluster file systems, and FUSE ones that
/// reach another host.
const NETWORK: &[&str] = &[
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "ncpfs",
    "9p",
    "afs",
    "coda",
    "ceph",
    "glusterfs",
    "lustre",
    "gfs2",
    "ocfs2",
    "gpfs",
    "beegfs",
    "orangefs",
    "pvfs2",
    "vboxsf",
    "davfs",
    "fuse.sshfs",
    "fuse.glusterfs",
    "fuse.s3fs",
    "fuse.rclone",
    "fuse.gcsfuse",
    "fuse.davfs",
    "fuse.ceph-fuse",
    "fuse.juicefs",
    "fuse.vmhgfs-fuse",
    "fuse.mfs",
    "fuse.seaweedfs",
    "fuse.blobfuse2",
    "fuse.goofys",
];

/// The network file system type that holds `dir`, if it is one. A folder
/// that does not exist yet is judged by its nearest existing parent; an
/// unreadable mount table judges nothing.
pub(crate) fn network_fs(dir: &Path) -> Option<String> {
    let real = existing_ancestor(dir)?;
    let table = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let fs = fs_type_of(&table, &real)?;
    is_network(&fs).then_some(fs)
}

fn existing_ancestor(dir: &Path) -> Option<PathBuf> {
    let abs = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(dir)
    };
    abs.ancestors().find_map(|a| a.canonicalize().ok())
}

/// Whether the type names a network or cluster file system.
pub(crate) fn is_network(fs: &str) -> bool {
    NETWORK.contains(&fs) || fs.starts_with("nfs")
}

/// The type of the mount holding `path` (absolute, real) in a
/// `mountinfo` table: the last listed of the longest mount points that
/// contain it (a later mount over the same point hides the earlier one).
pub(crate) fn fs_type_of(table: &str, path: &Path) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in table.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let (Some(point), Some(fs)) = (left.split(' ').nth(4), right.split(' ').next()) else {
            continue;
        };
        let point = PathBuf::from(unescape(point));
        if !path.starts_with(&point) {
            continue;
        }
        let depth = point.components().count();
        if best.as_ref().is_none_or(|(d, _)| depth >= *d) {
            best = Some((depth, fs.to_string()));
        }
    }
    best.map(|(_, fs)| fs)
}

/// A mount point as the kernel writes it: space, tab, newline and
/// backslash as three octal digits after a backslash.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 253:0 / / rw,relatime - ext4 /dev/vda rw
40 27 0:45 / /srv/results rw,relatime - nfs4 fs.lab:/export/results rw,vers=4.2
41 40 0:46 / /srv/results/local rw,relatime - tmpfs tmpfs rw
42 27 0:47 / /mnt/my\\040share rw - cifs //nas/share rw
43 27 0:48 / /home/u/remote rw - fuse.sshfs u@host: rw
44 27 0:49 / /mnt/over rw - nfs srv:/a rw
45 27 0:50 / /mnt/over rw - ext4 /dev/vdb rw
";

    fn fs(p: &str) -> Option<String> {
        fs_type_of(TABLE, Path::new(p))
    }

    #[test]
    fn the_longest_mount_point_holding_the_path_names_its_file_system() {
        assert_eq!(fs("/home/u/results.db").as_deref(), Some("ext4"));
        assert_eq!(fs("/srv/results/lab/results.db").as_deref(), Some("nfs4"));
        assert_eq!(fs("/srv/results/local/x.db").as_deref(), Some("tmpfs"));
        // A prefix of a name is not a parent folder.
        assert_eq!(fs("/srv/results2/x.db").as_deref(), Some("ext4"));
        assert_eq!(fs("/mnt/my share/x.db").as_deref(), Some("cifs"));
        assert_eq!(fs("/home/u/remote/x.db").as_deref(), Some("fuse.sshfs"));
        // The later of two mounts on one point is the one seen.
        assert_eq!(fs("/mnt/over/x.db").as_deref(), Some("ext4"));
    }

    #[test]
    fn network_and_cluster_file_systems_are_named_and_local_ones_are_not() {
        for n in [
            "nfs",
            "nfs4",
            "cifs",
            "smb3",
            "9p",
            "ceph",
            "fuse.sshfs",
            "glusterfs",
            "lustre",
        ] {
            assert!(is_network(n), "{n}");
        }
        for l in [
            "ext4",
            "xfs",
            "btrfs",
            "tmpfs",
            "zfs",
            "overlay",
            "fuse.lxcfs",
            "virtiofs",
        ] {
            assert!(!is_network(l), "{l}");
        }
    }

    #[test]
    fn this_machines_temporary_folder_is_judged_local() {
        assert_eq!(network_fs(&std::env::temp_dir()), None);
        assert_eq!(network_fs(&std::env::temp_dir().join("not/made/yet")), None);
    }
}
