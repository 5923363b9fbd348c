//! Swift/T's path functions (`dirname`, `basename`, `rootname`,
//! `extension`, `realpath` and their `_string` forms) as Tcl's `file`
//! command computes them on Unix: a trailing `/` ends no component, the
//! last component decides a root name and an extension.

use crate::exec::files::LOCUS_PREFIX;
use std::path::{Component, Path, PathBuf};

/// The components of `p` after its root, as `file split` gives them.
fn parts(p: &str) -> Vec<&str> {
    p.split('/').filter(|c| !c.is_empty()).collect()
}

/// `file dirname`: all but the last component; `.` for a relative name of
/// one component, `/` for the root or a component just under it.
pub(crate) fn dirname(p: &str) -> String {
    let absolute = p.starts_with('/');
    let parts = parts(p);
    match (parts.len(), absolute) {
        (0 | 1, true) => "/".into(),
        (0 | 1, false) => ".".into(),
        (n, true) => format!("/{}", parts[..n - 1].join("/")),
        (n, false) => parts[..n - 1].join("/"),
    }
}

/// `file tail`: the last component (empty for the root).
pub(crate) fn basename(p: &str) -> String {
    parts(p)
        .last()
        .map_or(String::new(), std::string::ToString::to_string)
}

/// Where the extension of `p`'s last component starts, if it has a dot.
fn last_dot(p: &str) -> Option<usize> {
    let start = p.rfind('/').map_or(0, |i| i + 1);
    p[start..].rfind('.').map(|i| start + i)
}

/// `file rootname`: `p` up to the last dot of its last component.
pub(crate) fn rootname(p: &str) -> String {
    last_dot(p).map_or(p, |i| &p[..i]).to_string()
}

/// `file extension`: from the last dot of the last component on (empty
/// if it has none).
pub(crate) fn extension(p: &str) -> String {
    last_dot(p).map_or("", |i| &p[i..]).to_string()
}

/// `file normalize`: absolute, with `.` and `..` taken away and the links
/// of the host directories it is in followed (a Locus path is taken as it
/// is written: `/locus` is no host directory).
pub(crate) fn realpath(p: &str) -> String {
    let absolute = match Path::new(p).is_absolute() {
        true => PathBuf::from(p),
        false => std::env::current_dir().unwrap_or_default().join(p),
    };
    let mut clean = PathBuf::from("/");
    for c in absolute.components() {
        match c {
            Component::ParentDir => {
                clean.pop();
            }
            Component::Normal(n) => clean.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    let locus = clean.starts_with(LOCUS_PREFIX);
    let (Some(parent), Some(name)) = (clean.parent(), clean.file_name()) else {
        return clean.display().to_string();
    };
    match std::fs::canonicalize(parent) {
        Ok(real) if !locus => real.join(name).display().to_string(),
        _ => clean.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_as_tcl_file_splits_them() {
        let cases = [
            // path, dirname, basename, rootname, extension
            ("a/b/c.txt", "a/b", "c.txt", "a/b/c", ".txt"),
            ("c.tar.gz", ".", "c.tar.gz", "c.tar", ".gz"),
            ("/c", "/", "c", "/c", ""),
            ("/", "/", "", "/", ""),
            ("a/b/", "a", "b", "a/b/", ""),
            ("a.d/b", "a.d", "b", "a.d/b", ""),
            (".bashrc", ".", ".bashrc", "", ".bashrc"),
            ("/x//y.z", "/x", "y.z", "/x//y", ".z"),
            ("", ".", "", "", ""),
        ];
        for (p, dir, base, root, ext) in cases {
            assert_eq!(dirname(p), dir, "dirname {p}");
            assert_eq!(basename(p), base, "basename {p}");
            assert_eq!(rootname(p), root, "rootname {p}");
            assert_eq!(extension(p), ext, "extension {p}");
        }
    }

    #[test]
    fn realpath_is_absolute_without_dots_and_follows_host_links() {
        assert_eq!(realpath("/locus/a/./b/../c"), "/locus/a/c");
        assert_eq!(realpath("/../x"), "/x");
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        let via = format!("{}/link/./f", dir.path().display());
        let expected = std::fs::canonicalize(&real).unwrap().join("f");
        assert_eq!(realpath(&via), expected.display().to_string());
        assert!(realpath("rel").starts_with('/'));
    }
}
