//! User modules: `import a.b;` (not a library module) loads `a/b.swift`
//! from the importing file's directory, the script's, then the search
//! path (`-I DIR`, `SWIFT_PATH`), as Swift/T does. A module's definitions
//! join the script's, and its statements run as the script's top-level
//! ones do, where it is first imported; each module is loaded once however
//! often imported, so an import cycle (a module importing itself through
//! others) loads each once, as in Swift/T. A missing module is an error at
//! the import.
//!
//! Library modules are builtins, except those written in Swift and built
//! into the compiler (`library/*.swift`), which load like user modules.

use crate::ast::{Item, Program};
use crate::diag::Diagnostic;
use crate::source::{Source, Span};
use crate::{builtins, lexer, parser};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Library modules written in Swift: (module, source).
const LIBRARY: &[(&str, &str)] = &[("unix", include_str!("library/unix.swift"))];

struct Loader<'s> {
    src: &'s Source,
    loaded: HashSet<String>,
    diags: Vec<Diagnostic>,
}

/// Replaces every user-module import in `program` by the module's items.
pub(crate) fn expand(src: &Source, program: &mut Program) -> Vec<Diagnostic> {
    let mut l = Loader {
        src,
        loaded: HashSet::new(),
        diags: Vec::new(),
    };
    let dir = script_dir(Path::new(&src.name));
    let items = std::mem::take(&mut program.items);
    program.items = l.items(items, &dir, &mut Vec::new());
    l.diags
}

fn script_dir(file: &Path) -> PathBuf {
    match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

impl Loader<'_> {
    /// `items` of a file in `dir`, imports of user modules replaced by
    /// their items; `stack` holds the modules being loaded.
    fn items(&mut self, items: Vec<Item>, dir: &Path, stack: &mut Vec<String>) -> Vec<Item> {
        let mut out = Vec::new();
        for item in items {
            let Item::Import { path, span } = &item else {
                out.push(item);
                continue;
            };
            let name: Vec<&str> = path.iter().map(|p| p.name.as_str()).collect();
            let name = name.join(".");
            if builtins::MODULES.contains(&name.as_str()) {
                let source = LIBRARY.iter().find(|(m, _)| *m == name);
                out.push(item);
                if let Some((module, text)) = source {
                    if self.loaded.insert(name.clone()) {
                        let file = PathBuf::from(format!("<library>/{module}.swift"));
                        out.extend(self.parse(&file, text.to_string()));
                    }
                }
                continue;
            }
            // Loaded, or being loaded (a cycle): its items are there.
            if !self.loaded.insert(name.clone()) {
                continue;
            }
            let rel: PathBuf = path.iter().map(|p| p.name.as_str()).collect();
            let rel = rel.with_extension("swift");
            let mut dirs = vec![dir.to_path_buf(), script_dir(Path::new(&self.src.name))];
            dirs.extend(self.src.search.iter().cloned());
            dirs.dedup();
            let Some(file) = dirs.iter().map(|d| d.join(&rel)).find(|f| f.is_file()) else {
                let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
                self.error(
                    *span,
                    format!(
                        "unknown module '{name}': no {} in {} (add a directory with -I or SWIFT_PATH)",
                        rel.display(),
                        looked.join(", ")
                    ),
                );
                continue;
            };
            let text = match std::fs::read(&file) {
                Ok(t) => String::from_utf8_lossy(&t).into_owned(),
                Err(e) => {
                    self.error(*span, format!("module '{name}': {}: {e}", file.display()));
                    continue;
                }
            };
            stack.push(name);
            let module = self.parse(&file, text);
            out.extend(self.items(module, &script_dir(&file), stack));
            stack.pop();
        }
        out
    }

    /// A module's items: definitions and statements (no `main`).
    fn parse(&mut self, file: &Path, text: String) -> Vec<Item> {
        let base = self
            .src
            .add_module(file.display().to_string(), text.clone());
        let (mut tokens, lex_diags) = lexer::lex(&text);
        for t in &mut tokens {
            t.span = t.span.shifted(base);
        }
        self.diags.extend(lex_diags.into_iter().map(|mut d| {
            d.span = d.span.shifted(base);
            d
        }));
        let (program, parse_diags) = parser::parse(tokens);
        self.diags.extend(parse_diags);
        let mut items = Vec::new();
        for item in program.items {
            match &item {
                Item::Main { span, .. } => self.error(*span, "a module cannot have 'main'"),
                _ => items.push(item),
            }
        }
        items
    }

    fn error(&mut self, span: Span, message: impl Into<String>) {
        self.diags.push(Diagnostic::new(span, message));
    }
}
