//! Blocks prepared once per program: their statements, which declared
//! variables each statement writes (the writers a container waits for before
//! it closes), and their nested blocks. Running a block, however many times,
//! then copies and analyses nothing. Every block has an id, the same in
//! every server that compiled the same program, so work inside a block can
//! be sent to another server by naming it.
//!
//! Preparing is linear in the size of the program: each statement is visited
//! once, and what a nested block writes reaches its parent as the set of
//! variables it writes but does not declare.

use locus_lang::ir::{Function, Pos, Stmt, VarId};
use std::collections::{HashMap, HashSet};
use std::mem::take;
use std::sync::Arc;

pub(crate) type BlockId = u32;

pub(crate) struct Block {
    pub id: BlockId,
    /// The statements; a compound statement's own blocks are moved out into
    /// [`Block::nested`] (its bodies here are empty).
    pub stmts: Vec<Stmt>,
    /// For each statement, the variables declared in this block it writes.
    pub written: Vec<Vec<VarId>>,
    /// For each variable declared in this block, how many statements write it.
    pub writers: HashMap<VarId, usize>,
    /// For each statement, its nested blocks in the order of [`take_nested`].
    pub nested: Vec<Vec<Arc<Block>>>,
    /// Variables written anywhere inside this block but declared outside it.
    pub writes_outer: HashSet<VarId>,
    /// The futures each run of the block makes (its declarations).
    pub decls: u64,
    /// What runs the block again and again: its function, or the
    /// innermost loop around it.
    pub site: Site,
}

/// What makes the futures of a block (a run out of memory names it).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Site {
    Function(String),
    Loop(Pos),
}

/// The site of the blocks nested in `s`, inside a block of site `outer`.
fn site_of(s: &Stmt, outer: &Site) -> Site {
    match s {
        Stmt::ForeachArray { at, .. } | Stmt::ForeachRange { at, .. } | Stmt::Loop { at, .. } => {
            Site::Loop(*at)
        }
        _ => outer.clone(),
    }
}

/// Moves the blocks out of a statement: `if` then/else; `switch` cases then
/// default; a loop's body; `for` cond/body/next; `wait` body; `=>` parts.
fn take_nested(s: &mut Stmt) -> Vec<Vec<Stmt>> {
    match s {
        Stmt::If {
            then, otherwise, ..
        } => vec![take(then), take(otherwise)],
        Stmt::Switch { cases, default, .. } => cases
            .iter_mut()
            .map(|(_, b)| take(b))
            .chain([take(default)])
            .collect(),
        Stmt::ForeachArray { body, .. }
        | Stmt::ForeachRange { body, .. }
        | Stmt::Wait { body, .. } => vec![take(body)],
        Stmt::Loop {
            cond, body, next, ..
        } => vec![take(cond), take(body), take(next)],
        Stmt::Seq(parts) => take(parts),
        _ => Vec::new(),
    }
}

/// The variables a statement writes itself (not through nested blocks).
fn writes_directly(s: &Stmt) -> &[VarId] {
    match s {
        Stmt::Const { dst, .. }
        | Stmt::Op { dst, .. }
        | Stmt::Copy { dst, .. }
        | Stmt::ArrayGet { dst, .. }
        | Stmt::GetPath { dst, .. }
        | Stmt::StructGet { dst, .. } => std::slice::from_ref(dst),
        Stmt::Call { outs, .. } | Stmt::Builtin { outs, .. } => outs,
        Stmt::ArrayInsert { array, .. }
        | Stmt::ArrayAppend { array, .. }
        | Stmt::Update { var: array, .. } => std::slice::from_ref(array),
        Stmt::InsertPath { target, .. } | Stmt::StructSet { target, .. } => {
            std::slice::from_ref(target)
        }
        _ => &[],
    }
}

/// Every function's body, prepared, and every block by id.
pub(crate) struct Plans {
    bodies: HashMap<String, Arc<Block>>,
    blocks: Vec<Arc<Block>>,
}

impl Plans {
    /// Numbers blocks by function name, nested blocks before their parents:
    /// independent of the order of `funcs`.
    pub(crate) fn new<'f>(funcs: impl IntoIterator<Item = &'f Function>) -> Plans {
        let mut funcs: Vec<&Function> = funcs.into_iter().collect();
        funcs.sort_by(|a, b| a.name.cmp(&b.name));
        let mut blocks = Vec::new();
        let bodies = funcs
            .into_iter()
            .map(|f| {
                let site = Site::Function(f.name.clone());
                (f.name.clone(), plan(f.body.clone(), &site, &mut blocks))
            })
            .collect();
        Plans { bodies, blocks }
    }

    pub(crate) fn body(&self, func: &str) -> &Arc<Block> {
        &self.bodies[func]
    }

    pub(crate) fn block(&self, id: BlockId) -> Option<&Arc<Block>> {
        self.blocks.get(id as usize)
    }

    pub(crate) fn len(&self) -> usize {
        self.blocks.len()
    }
}

/// Recursion follows the script's nesting, which the front end bounds.
fn plan(mut stmts: Vec<Stmt>, site: &Site, blocks: &mut Vec<Arc<Block>>) -> Arc<Block> {
    let declared: HashSet<VarId> = stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Decl { var, .. } => Some(*var),
            _ => None,
        })
        .collect();
    let mut written = Vec::with_capacity(stmts.len());
    let mut nested = Vec::with_capacity(stmts.len());
    let mut writers: HashMap<VarId, usize> = declared.iter().map(|v| (*v, 0)).collect();
    let mut writes_outer = HashSet::new();
    for s in &mut stmts {
        let inner_site = site_of(s, site);
        let inner: Vec<Arc<Block>> = take_nested(s)
            .into_iter()
            .map(|b| plan(b, &inner_site, blocks))
            .collect();
        let mut mine: Vec<VarId> = writes_directly(s)
            .iter()
            .chain(inner.iter().flat_map(|b| &b.writes_outer))
            .copied()
            .collect();
        mine.sort_unstable();
        mine.dedup();
        mine.retain(|v| {
            let here = declared.contains(v);
            if !here {
                writes_outer.insert(*v);
            }
            here
        });
        for v in &mine {
            *writers.get_mut(v).expect("declared here") += 1;
        }
        written.push(mine);
        nested.push(inner);
    }
    let block = Arc::new(Block {
        // Nested blocks first: ids follow the order of completion.
        id: blocks.len() as BlockId,
        stmts,
        written,
        writers,
        nested,
        writes_outer,
        decls: declared.len() as u64,
        site: site.clone(),
    });
    blocks.push(block.clone());
    block
}
