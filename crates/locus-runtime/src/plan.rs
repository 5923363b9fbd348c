//! Blocks prepared once per program: their statements, which declared
//! variables each statement writes (the writers a container waits for before
//! it closes), and their nested blocks. Running a block, however many times,
//! then copies and analyses nothing. Every block has an id, the same in
//! every server that compiled the same program, so work inside a block can
//! be sent to another server by naming it.

use locus_lang::ir::{Function, Stmt, VarId};
use std::collections::HashMap;
use std::sync::Arc;

pub type BlockId = u32;

pub struct Block {
    pub id: BlockId,
    pub stmts: Vec<Stmt>,
    /// For each statement, the variables declared in this block it writes.
    pub written: Vec<Vec<VarId>>,
    /// For each variable declared in this block, how many statements write it.
    pub writers: HashMap<VarId, usize>,
    /// For each statement, its nested blocks in the order of [`nested`].
    pub nested: Vec<Vec<Arc<Block>>>,
}

/// The blocks inside a statement: `if` then/else; `switch` cases then
/// default; a loop's body; `for` cond/body/next; `wait` body; `=>` parts.
fn nested(s: &Stmt) -> Vec<&[Stmt]> {
    match s {
        Stmt::If {
            then, otherwise, ..
        } => vec![then, otherwise],
        Stmt::Switch { cases, default, .. } => cases
            .iter()
            .map(|(_, b)| b.as_slice())
            .chain([default.as_slice()])
            .collect(),
        Stmt::ForeachArray { body, .. }
        | Stmt::ForeachRange { body, .. }
        | Stmt::Wait { body, .. } => {
            vec![body]
        }
        Stmt::Loop {
            cond, body, next, ..
        } => vec![cond, body, next],
        Stmt::Seq(parts) => parts.iter().map(Vec::as_slice).collect(),
        _ => Vec::new(),
    }
}

/// Whether `s` (or anything nested in it) writes variable `v`.
pub fn writes(s: &Stmt, v: VarId) -> bool {
    let direct = match s {
        Stmt::Const { dst, .. }
        | Stmt::Op { dst, .. }
        | Stmt::Copy { dst, .. }
        | Stmt::ArrayGet { dst, .. }
        | Stmt::GetPath { dst, .. }
        | Stmt::StructGet { dst, .. } => *dst == v,
        Stmt::Call { outs, .. } | Stmt::Builtin { outs, .. } => outs.contains(&v),
        Stmt::ArrayInsert { array, .. } | Stmt::ArrayAppend { array, .. } => *array == v,
        Stmt::InsertPath { target, .. } => *target == v,
        Stmt::StructSet { target, .. } => *target == v,
        _ => false,
    };
    direct || nested(s).iter().any(|b| b.iter().any(|s| writes(s, v)))
}

/// Every function's body, prepared, and every block by id.
pub struct Plans {
    bodies: HashMap<String, Arc<Block>>,
    blocks: Vec<Arc<Block>>,
}

impl Plans {
    /// Numbers blocks by function name, nested blocks before their parents:
    /// independent of the order of `funcs`.
    pub fn new<'f>(funcs: impl IntoIterator<Item = &'f Function>) -> Plans {
        let mut funcs: Vec<&Function> = funcs.into_iter().collect();
        funcs.sort_by(|a, b| a.name.cmp(&b.name));
        let mut blocks = Vec::new();
        let bodies = funcs
            .into_iter()
            .map(|f| (f.name.clone(), plan(&f.body, &mut blocks)))
            .collect();
        Plans { bodies, blocks }
    }

    pub fn body(&self, func: &str) -> &Arc<Block> {
        &self.bodies[func]
    }

    pub fn block(&self, id: BlockId) -> Option<&Arc<Block>> {
        self.blocks.get(id as usize)
    }
}

fn plan(stmts: &[Stmt], blocks: &mut Vec<Arc<Block>>) -> Arc<Block> {
    let declared: Vec<VarId> = stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Decl { var, .. } => Some(*var),
            _ => None,
        })
        .collect();
    let written: Vec<Vec<VarId>> = stmts
        .iter()
        .map(|s| declared.iter().copied().filter(|v| writes(s, *v)).collect())
        .collect();
    let mut writers: HashMap<VarId, usize> = declared.iter().map(|v| (*v, 0)).collect();
    for v in written.iter().flatten() {
        *writers.get_mut(v).expect("declared here") += 1;
    }
    let nested = stmts
        .iter()
        .map(|s| nested(s).into_iter().map(|b| plan(b, blocks)).collect())
        .collect();
    let block = Arc::new(Block {
        // Nested blocks first: ids follow the order of completion.
        id: blocks.len() as BlockId,
        stmts: stmts.to_vec(),
        written,
        writers,
        nested,
    });
    blocks.push(block.clone());
    block
}
