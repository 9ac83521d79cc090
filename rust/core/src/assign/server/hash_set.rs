//! The iteration order of Java's `new HashSet<>(collection)` of Kafka `Uuid`s, simulated: table
//! size, hash spreading, insertion order in a bin, the resize a small table does at a bin's ninth
//! entry, and the red-black tree bins (`HashMap.TreeNode`) of tables of 64 slots or more, whose
//! iteration order is their root first, then the other entries as they were linked.

use super::Uuid;

const TREEIFY_THRESHOLD: usize = 8;
const MIN_TREEIFY_CAPACITY: usize = 64;

#[derive(Clone, Copy)]
struct Node {
    left: Option<usize>,
    right: Option<usize>,
    parent: Option<usize>,
    red: bool,
}

struct Set<'a> {
    ids: &'a [Uuid],
    hash: Vec<i32>,
    nodes: Vec<Node>,
    /// Each bin's entries in link order; `tree[b]` when the bin is a tree (its root is `bins[b][0]`).
    bins: Vec<Vec<usize>>,
    tree: Vec<bool>,
}

impl Set<'_> {
    /// `HashMap.TreeNode` walk order: hash (signed), then `Uuid.compareTo`.
    fn goes_left(&self, x: usize, p: usize) -> bool {
        match self.hash[p].cmp(&self.hash[x]) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => self.ids[x] < self.ids[p],
        }
    }

    fn rotate_left(&mut self, mut root: usize, p: usize) -> usize {
        if let Some(r) = self.nodes[p].right {
            let rl = self.nodes[r].left;
            self.nodes[p].right = rl;
            if let Some(rl) = rl {
                self.nodes[rl].parent = Some(p);
            }
            let pp = self.nodes[p].parent;
            self.nodes[r].parent = pp;
            match pp {
                None => {
                    root = r;
                    self.nodes[r].red = false;
                }
                Some(pp) if self.nodes[pp].left == Some(p) => self.nodes[pp].left = Some(r),
                Some(pp) => self.nodes[pp].right = Some(r),
            }
            self.nodes[r].left = Some(p);
            self.nodes[p].parent = Some(r);
        }
        root
    }

    fn rotate_right(&mut self, mut root: usize, p: usize) -> usize {
        if let Some(l) = self.nodes[p].left {
            let lr = self.nodes[l].right;
            self.nodes[p].left = lr;
            if let Some(lr) = lr {
                self.nodes[lr].parent = Some(p);
            }
            let pp = self.nodes[p].parent;
            self.nodes[l].parent = pp;
            match pp {
                None => {
                    root = l;
                    self.nodes[l].red = false;
                }
                Some(pp) if self.nodes[pp].right == Some(p) => self.nodes[pp].right = Some(l),
                Some(pp) => self.nodes[pp].left = Some(l),
            }
            self.nodes[l].right = Some(p);
            self.nodes[p].parent = Some(l);
        }
        root
    }

    /// `TreeNode.balanceInsertion`: returns the new root.
    fn balance_insertion(&mut self, mut root: usize, mut x: usize) -> usize {
        self.nodes[x].red = true;
        loop {
            let Some(mut xp) = self.nodes[x].parent else {
                self.nodes[x].red = false;
                return x;
            };
            if !self.nodes[xp].red {
                return root;
            }
            let Some(mut xpp) = self.nodes[xp].parent else {
                return root;
            };
            let xppl = self.nodes[xpp].left;
            if Some(xp) == xppl {
                match self.nodes[xpp].right {
                    Some(uncle) if self.nodes[uncle].red => {
                        self.nodes[uncle].red = false;
                        self.nodes[xp].red = false;
                        self.nodes[xpp].red = true;
                        x = xpp;
                    }
                    _ => {
                        let mut has_xp = true;
                        let mut grand = Some(xpp);
                        if self.nodes[xp].right == Some(x) {
                            x = xp;
                            root = self.rotate_left(root, x);
                            if let Some(p) = self.nodes[x].parent {
                                xp = p;
                                grand = self.nodes[p].parent;
                            } else {
                                has_xp = false;
                                grand = None;
                            }
                        }
                        if has_xp {
                            self.nodes[xp].red = false;
                            if let Some(g) = grand {
                                xpp = g;
                                self.nodes[xpp].red = true;
                                root = self.rotate_right(root, xpp);
                            }
                        }
                    }
                }
            } else {
                match xppl {
                    Some(l) if self.nodes[l].red => {
                        self.nodes[l].red = false;
                        self.nodes[xp].red = false;
                        self.nodes[xpp].red = true;
                        x = xpp;
                    }
                    _ => {
                        let mut has_xp = true;
                        let mut grand = Some(xpp);
                        if self.nodes[xp].left == Some(x) {
                            x = xp;
                            root = self.rotate_right(root, x);
                            if let Some(p) = self.nodes[x].parent {
                                xp = p;
                                grand = self.nodes[p].parent;
                            } else {
                                has_xp = false;
                                grand = None;
                            }
                        }
                        if has_xp {
                            self.nodes[xp].red = false;
                            if let Some(g) = grand {
                                xpp = g;
                                self.nodes[xpp].red = true;
                                root = self.rotate_left(root, xpp);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Insert `x` under the tree rooted at `root`; returns its parent in the tree.
    fn tree_insert(&mut self, root: usize, x: usize) -> usize {
        let mut p = root;
        loop {
            let left = self.goes_left(x, p);
            let next = if left {
                self.nodes[p].left
            } else {
                self.nodes[p].right
            };
            if let Some(n) = next {
                p = n;
            } else {
                self.nodes[x] = Node {
                    left: None,
                    right: None,
                    parent: Some(p),
                    red: false,
                };
                if left {
                    self.nodes[p].left = Some(x);
                } else {
                    self.nodes[p].right = Some(x);
                }
                return p;
            }
        }
    }

    fn move_root_to_front(&mut self, bin: usize, root: usize) {
        let list = &mut self.bins[bin];
        if let Some(at) = list.iter().position(|&e| e == root) {
            list.remove(at);
            list.insert(0, root);
        }
    }

    /// `TreeNode.treeify` over the bin's entries in link order.
    fn treeify(&mut self, bin: usize) {
        let entries = self.bins[bin].clone();
        let mut root = entries[0];
        self.nodes[root] = Node {
            left: None,
            right: None,
            parent: None,
            red: false,
        };
        for &x in &entries[1..] {
            self.tree_insert(root, x);
            root = self.balance_insertion(root, x);
        }
        self.tree[bin] = true;
        self.move_root_to_front(bin, root);
    }

    /// `TreeNode.putTreeVal` for a new key: linked right after its tree parent.
    fn put_tree(&mut self, bin: usize, x: usize) {
        let root = self.bins[bin][0];
        let parent = self.tree_insert(root, x);
        let at = self.bins[bin]
            .iter()
            .position(|&e| e == parent)
            .unwrap_or(0);
        self.bins[bin].insert(at + 1, x);
        let root = self.balance_insertion(root, x);
        self.move_root_to_front(bin, root);
    }
}

/// The iteration order of `new HashSet<>(c)` for a collection `c` iterating `ids` (distinct) in
/// the order given: indices into `ids`.
///
/// `HashSet(Collection)` sizes its table to `tableSizeFor(max((int)(n / .75f) + 1, 16))`, then
/// adds in order. A bin reaching a ninth entry doubles a table under 64 slots (bins split keeping
/// their order) and becomes a red-black tree in a larger one. Iteration walks the slots in order,
/// each slot's entries as linked: insertion order in a list bin; in a tree bin the root first.
///
/// ```
/// use mqbalance_core::assign::server::{java_hash_set_order, Uuid};
/// let ids = [Uuid { msb: 0, lsb: 17 }, Uuid { msb: 0, lsb: 2 }, Uuid { msb: 0, lsb: 1 }];
/// // hashCodes 17, 2, 1 -> slots 1, 2, 1 of 16: slot 1 holds 17 then 1 (insertion order).
/// assert_eq!(java_hash_set_order(&ids), vec![0, 2, 1]);
/// ```
pub fn java_hash_set_order(ids: &[Uuid]) -> Vec<usize> {
    let n = ids.len();
    // Java's `(int) (c.size() / .75f) + 1`: an int divided as a float, as HashSet does.
    #[allow(clippy::cast_precision_loss)]
    let initial = (((n as f32) / 0.75f32) as i32 as usize + 1).max(16);
    let mut cap = initial.next_power_of_two().min(1 << 30);
    let hash: Vec<i32> = ids
        .iter()
        .map(|u| {
            let h = u.java_hash_code();
            h ^ ((h as u32) >> 16) as i32
        })
        .collect();
    let mut set = Set {
        ids,
        hash,
        nodes: vec![
            Node {
                left: None,
                right: None,
                parent: None,
                red: false
            };
            n
        ],
        bins: vec![Vec::new(); cap],
        tree: vec![false; cap],
    };
    for x in 0..n {
        let bin = set.hash[x] as u32 as usize & (cap - 1);
        if set.tree[bin] {
            set.put_tree(bin, x);
            continue;
        }
        set.bins[bin].push(x);
        if set.bins[bin].len() > TREEIFY_THRESHOLD {
            if cap < MIN_TREEIFY_CAPACITY {
                // resize(): every bin splits in two, keeping its order (no trees exist yet).
                cap *= 2;
                let mut bins = vec![Vec::new(); cap];
                for old in std::mem::take(&mut set.bins) {
                    for e in old {
                        bins[set.hash[e] as u32 as usize & (cap - 1)].push(e);
                    }
                }
                set.bins = bins;
                set.tree = vec![false; cap];
            } else {
                set.treeify(bin);
            }
        }
    }
    set.bins.concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ninth_entry_of_a_small_table_resizes() {
        // Nine ids in slot 1 of 16; the ninth doubles the table to 32: hash 17 moves to slot 17.
        let ids: Vec<Uuid> = [1, 17, 33, 49, 65, 81, 97, 113, 129]
            .iter()
            .map(|&h| Uuid { msb: 0, lsb: h })
            .collect();
        let order = java_hash_set_order(&ids);
        let hashes: Vec<i64> = order.iter().map(|&i| ids[i].lsb).collect();
        assert_eq!(hashes, vec![1, 33, 65, 97, 129, 17, 49, 81, 113]);
    }

    #[test]
    fn a_tree_bin_lists_its_root_first() {
        // Eleven ids with hashCode 0 (lsb halves equal): 16 -> 32 -> 64 slots, then a tree of 9
        // ordered by Uuid.compareTo (lsb k<<32|k ascending with k), root first, then link order.
        let ids: Vec<Uuid> = (0..11)
            .map(|k| Uuid {
                msb: 0,
                lsb: k << 32 | k,
            })
            .collect();
        let order = java_hash_set_order(&ids);
        assert_eq!(order.len(), 11);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..11).collect::<Vec<_>>());
        assert_ne!(order, (0..11).collect::<Vec<_>>()); // the root moved to the front
    }
}
