//! An order of a graph's nodes where every edge runs forward, apart from
//! where the edges come from: the spans' nesting in a pass
//! ([`super::Graph`]), or a test's list of arbitrary edges, cycles among
//! them, which spans make only from a hostile file. One algorithm, read
//! through [`Predecessors`], so that what the tests check is what runs.

use super::graph::Node;

/// A graph as the order reads it: how many nodes, and each one's
/// predecessors in the order the walk prefers them.
pub(crate) trait Predecessors {
    fn nodes(&self) -> usize;
    fn each_pred(&self, v: Node, f: &mut dyn FnMut(Node));
}

/// A depth-first walk along the predecessors: `place` hears each node
/// after all of its own; false on a cycle. It needs a byte a node and a
/// stack as deep as the longest chain of waits, where Kahn's needed the
/// successors' CSR, in-degrees and a cursor beside the graph (36 bytes a
/// span; 160 MB at 4.5M spans).
pub(crate) fn depth_first(g: &dyn Predecessors, place: &mut dyn FnMut(Node)) -> bool {
    const NEW: u8 = 0;
    const OPEN: u8 = 1;
    const PLACED: u8 = 2;
    let m = g.nodes();
    let mut state = vec![NEW; m];
    // The open nodes, each with where its predecessors still to visit
    // start in `pending` (first to visit last).
    let mut stack: Vec<(Node, u32)> = Vec::new();
    let mut pending: Vec<Node> = Vec::new();
    let open = |v: Node, stack: &mut Vec<(Node, u32)>, pending: &mut Vec<Node>, state: &mut [u8]| {
        state[v.index()] = OPEN;
        // Fewer than 2^32: at most the edges of the nodes on the stack.
        let first = pending.len();
        stack.push((v, first as u32));
        g.each_pred(v, &mut |u| pending.push(u));
        pending[first..].reverse();
    };
    for root in (0..m).map(Node::at) {
        if state[root.index()] != NEW {
            continue;
        }
        open(root, &mut stack, &mut pending, &mut state);
        while let Some(&(v, first)) = stack.last() {
            if pending.len() > first as usize {
                let u = pending.pop().expect("more than the frame's start");
                match state[u.index()] {
                    NEW => open(u, &mut stack, &mut pending, &mut state),
                    OPEN => return false,
                    _ => {}
                }
            } else {
                state[v.index()] = PLACED;
                place(v);
                stack.pop();
            }
        }
    }
    true
}
