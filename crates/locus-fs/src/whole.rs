//! Small files written whole: written beside their place under a name of
//! the writing process's own, then renamed over it, so a reader (on any
//! host of the shared file system) sees the old file or the new one, and
//! writers at once do not write into each other's temporary file.

use std::io;
use std::path::Path;

/// Replaces `path` with `bytes` at once.
pub fn write_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Replaces `path` with `value` as pretty JSON (read by people too).
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> io::Result<()> {
    write_whole(
        path,
        &serde_json::to_vec_pretty(value).map_err(io::Error::other)?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_nothing_is_left_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.json");
        write_json(&f, &vec![1, 2]).unwrap();
        write_whole(&f, b"[3]").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"[3]");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }
}
