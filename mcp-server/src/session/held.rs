//! The sessions this worker holds (minted here and not yet seen end), in least recently used
//! order of the idle ones, for eviction at the session cap and at the per-peer quota.
//!
//! A session is *busy* while a request of it runs here or a stream of it is open here (a
//! [`Hold`](super::store::Hold) counts each); busy sessions are in no list, so they are
//! never chosen. An idle session sits in two intrusive doubly linked lists, least recently
//! used first: every idle session of this worker, and the idle sessions of its peer (when it
//! has one: sessions without a principal). Nodes live in a slab, so every operation (holding,
//! releasing, choosing a victim, forgetting) is O(1) and allocates nothing once the slab has
//! grown to the cap.
//!
//! Per-peer bookkeeping is one entry per peer with at least one session here (or one being
//! minted): the number of peers tracked never exceeds the number of sessions held.

use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

use crate::FastMap;

/// No node.
const NIL: u32 = u32::MAX;

/// Whom a session without a principal is counted for: the client's address, IPv6 addresses by
/// their /64 network (one host is commonly given a whole /64), IPv4-mapped ones as IPv4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PeerKey(IpAddr);

impl PeerKey {
    /// The address (IPv6: its /64 network) this key stands for.
    pub(crate) fn ip(&self) -> IpAddr {
        self.0
    }

    /// The key of a client at `ip`.
    pub(crate) fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Self(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Self(IpAddr::V4(v4)),
                None => {
                    let bits = u128::from(v6) & !((1u128 << 64) - 1);
                    Self(IpAddr::V6(Ipv6Addr::from(bits)))
                }
            },
        }
    }
}

/// A place of a node in the slab, with the generation it was given at (so a stale handle,
/// whose session was forgotten and whose place was reused, finds nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    index: u32,
    generation: u32,
}

struct Node {
    id: Arc<str>,
    peer: Option<PeerKey>,
    /// Requests running and streams open here.
    busy: u32,
    /// Links of the list of every idle session.
    prev: u32,
    next: u32,
    /// Links of the list of the peer's idle sessions.
    peer_prev: u32,
    peer_next: u32,
}

struct Slot {
    generation: u32,
    node: Option<Node>,
}

/// The ends of one idle list.
#[derive(Clone, Copy)]
struct Ends {
    head: u32,
    tail: u32,
}

impl Default for Ends {
    fn default() -> Self {
        Self {
            head: NIL,
            tail: NIL,
        }
    }
}

#[derive(Default)]
struct PeerEntry {
    /// Sessions held and being minted for the peer.
    count: usize,
    idle: Ends,
}

/// Why a new session cannot be placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Full {
    /// Every session of this worker is busy.
    Cap,
    /// Every session of the peer is busy.
    Peer,
}

/// Why a session was chosen to make room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Eviction {
    /// This worker held its maximum of sessions.
    Cap,
    /// The peer held its maximum of sessions.
    PeerQuota,
}

impl Eviction {
    /// The metric label and log cause.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Cap => "cap",
            Self::PeerQuota => "peer_quota",
        }
    }
}

/// A session chosen to make room, and why.
pub(crate) type Evicted = (Arc<str>, Eviction);

/// A place reserved for a session being minted: counted against the cap (and its peer's
/// quota) until it is [`filled`](Held::fill) or [`given back`](Held::unreserve).
#[derive(Debug)]
pub(crate) struct Reservation {
    pub(crate) peer: Option<PeerKey>,
}

/// The sessions this worker holds.
#[derive(Default)]
pub(crate) struct Held {
    slots: Vec<Slot>,
    free: Vec<u32>,
    by_id: FastMap<Arc<str>, Place>,
    idle: Ends,
    peers: FastMap<PeerKey, PeerEntry>,
    /// Places reserved for sessions being minted.
    reserved: usize,
}

impl Held {
    /// Sessions held and being minted.
    pub(crate) fn count(&self) -> usize {
        self.by_id.len() + self.reserved
    }

    /// Peers tracked (tests).
    #[cfg(test)]
    pub(crate) fn peers(&self) -> usize {
        self.peers.len()
    }

    /// Reserves a place for a new session of `peer` within `max` sessions and `per_peer`
    /// sessions of the peer. At a limit, the least recently used idle session (the peer's
    /// own at its quota, else this worker's) is forgotten here and returned with the reason,
    /// for the caller to end; when every candidate is busy, [`Full`].
    pub(crate) fn reserve(
        &mut self,
        peer: Option<PeerKey>,
        max: usize,
        per_peer: usize,
    ) -> Result<(Reservation, Option<Evicted>), Full> {
        let mut evicted = None;
        if let Some(peer) = peer {
            let count = self.peers.get(&peer).map_or(0, |p| p.count);
            if count >= per_peer {
                let head = self.peers.get(&peer).map_or(NIL, |p| p.idle.head);
                if head == NIL {
                    return Err(Full::Peer);
                }
                evicted = Some((self.remove_at(head), Eviction::PeerQuota));
            }
        }
        // A session of the peer made room already; otherwise, at the cap, this worker's
        // least recently used idle session does.
        if evicted.is_none() && self.count() >= max {
            let head = self.idle.head;
            if head == NIL {
                return Err(Full::Cap);
            }
            evicted = Some((self.remove_at(head), Eviction::Cap));
        }
        self.reserved += 1;
        self.count_peer(peer);
        Ok((Reservation { peer }, evicted))
    }

    fn count_peer(&mut self, peer: Option<PeerKey>) {
        if let Some(peer) = peer {
            self.peers.entry(peer).or_default().count += 1;
        }
    }

    fn uncount_peer(&mut self, peer: Option<PeerKey>) {
        let Some(peer) = peer else { return };
        if let Some(entry) = self.peers.get_mut(&peer) {
            entry.count = entry.count.saturating_sub(1);
            if entry.count == 0 {
                self.peers.remove(&peer);
            }
        }
    }

    /// Gives back a place whose session was not minted.
    pub(crate) fn unreserve(&mut self, reservation: Reservation) {
        self.reserved = self.reserved.saturating_sub(1);
        self.uncount_peer(reservation.peer);
    }

    /// Fills a reserved place with the minted session `id`, idle and most recently used; its
    /// place (`None` when it could not be tracked).
    pub(crate) fn fill(&mut self, reservation: Reservation, id: Arc<str>) -> Option<Place> {
        self.reserved = self.reserved.saturating_sub(1);
        let peer = reservation.peer;
        let node = Node {
            id: id.clone(),
            peer,
            busy: 0,
            prev: NIL,
            next: NIL,
            peer_prev: NIL,
            peer_next: NIL,
        };
        let index = match self.free.pop() {
            Some(index) => {
                let slot = &mut self.slots[index as usize];
                slot.node = Some(node);
                index
            }
            None => {
                // Beyond 2^32 - 1 places (no such memory) a session is not tracked: never
                // evicted, and freed by its end as any other.
                let Some(index) = u32::try_from(self.slots.len()).ok().filter(|i| *i < NIL) else {
                    self.uncount_peer(peer);
                    return None;
                };
                self.slots.push(Slot {
                    generation: 0,
                    node: Some(node),
                });
                index
            }
        };
        let generation = self.slots[index as usize].generation;
        let place = Place { index, generation };
        self.by_id.insert(id, place);
        self.link(index);
        Some(place)
    }

    /// Marks session `id` busy (one more request or stream); `None` when this worker does
    /// not hold it.
    #[cfg(test)]
    pub(crate) fn hold(&mut self, id: &str) -> Option<Place> {
        let place = *self.by_id.get(id)?;
        self.hold_at(place)
    }

    /// [`hold`](Self::hold) by the place [`fill`](Self::fill) gave, without looking the id
    /// up; `None` when the session there was forgotten or evicted meanwhile.
    pub(crate) fn hold_at(&mut self, place: Place) -> Option<Place> {
        let slot = self.slots.get_mut(place.index as usize)?;
        if slot.generation != place.generation {
            return None;
        }
        let node = slot.node.as_mut()?;
        node.busy += 1;
        if node.busy == 1 {
            self.unlink(place.index);
        }
        Some(place)
    }

    /// Ends one hold of the session at `place`: idle again (and most recently used) when it
    /// was the last. Nothing when the session was forgotten meanwhile.
    pub(crate) fn release(&mut self, place: Place) {
        let Some(slot) = self.slots.get_mut(place.index as usize) else {
            return;
        };
        if slot.generation != place.generation {
            return;
        }
        let Some(node) = slot.node.as_mut() else {
            return;
        };
        node.busy = node.busy.saturating_sub(1);
        if node.busy == 0 {
            self.link(place.index);
        }
    }

    /// Forgets session `id` (it ended); returns whether this worker held it.
    pub(crate) fn forget(&mut self, id: &str) -> bool {
        match self.by_id.get(id) {
            Some(place) => {
                let index = place.index;
                self.remove_at(index);
                true
            }
            None => false,
        }
    }

    /// Removes the node at `index` from everything; returns its id.
    fn remove_at(&mut self, index: u32) -> Arc<str> {
        let busy = self.slots[index as usize]
            .node
            .as_ref()
            .is_some_and(|n| n.busy > 0);
        if !busy {
            self.unlink(index);
        }
        let slot = &mut self.slots[index as usize];
        let node = slot.node.take();
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(index);
        let Some(node) = node else {
            return Arc::from("");
        };
        self.by_id.remove(&node.id);
        self.uncount_peer(node.peer);
        node.id
    }

    /// Appends the node at `index` to the idle lists (its peer's too).
    fn link(&mut self, index: u32) {
        let Some(node) = self.slots[index as usize].node.as_mut() else {
            return;
        };
        let peer = node.peer;
        node.prev = self.idle.tail;
        node.next = NIL;
        let old_tail = self.idle.tail;
        if old_tail == NIL {
            self.idle.head = index;
        } else if let Some(tail) = self.slots[old_tail as usize].node.as_mut() {
            tail.next = index;
        }
        self.idle.tail = index;
        let Some(peer) = peer else { return };
        let Some(entry) = self.peers.get_mut(&peer) else {
            return;
        };
        let old_tail = entry.idle.tail;
        if old_tail == NIL {
            entry.idle.head = index;
        }
        entry.idle.tail = index;
        if let Some(node) = self.slots[index as usize].node.as_mut() {
            node.peer_prev = old_tail;
            node.peer_next = NIL;
        }
        if old_tail != NIL
            && let Some(tail) = self.slots[old_tail as usize].node.as_mut()
        {
            tail.peer_next = index;
        }
    }

    /// Takes the node at `index` out of the idle lists.
    fn unlink(&mut self, index: u32) {
        let Some(node) = self.slots[index as usize].node.as_ref() else {
            return;
        };
        let (prev, next, peer, peer_prev, peer_next) = (
            node.prev,
            node.next,
            node.peer,
            node.peer_prev,
            node.peer_next,
        );
        self.set_next(prev, next, false);
        self.set_prev(next, prev, false);
        if prev == NIL {
            self.idle.head = next;
        }
        if next == NIL {
            self.idle.tail = prev;
        }
        if let Some(peer) = peer {
            self.set_next(peer_prev, peer_next, true);
            self.set_prev(peer_next, peer_prev, true);
            if let Some(entry) = self.peers.get_mut(&peer) {
                if peer_prev == NIL {
                    entry.idle.head = peer_next;
                }
                if peer_next == NIL {
                    entry.idle.tail = peer_prev;
                }
            }
        }
        if let Some(node) = self.slots[index as usize].node.as_mut() {
            node.prev = NIL;
            node.next = NIL;
            node.peer_prev = NIL;
            node.peer_next = NIL;
        }
    }

    fn set_next(&mut self, at: u32, to: u32, peer: bool) {
        if at == NIL {
            return;
        }
        if let Some(node) = self.slots[at as usize].node.as_mut() {
            if peer {
                node.peer_next = to;
            } else {
                node.next = to;
            }
        }
    }

    fn set_prev(&mut self, at: u32, to: u32, peer: bool) {
        if at == NIL {
            return;
        }
        if let Some(node) = self.slots[at as usize].node.as_mut() {
            if peer {
                node.peer_prev = to;
            } else {
                node.prev = to;
            }
        }
    }

    /// The idle sessions, least recently used first (tests).
    #[cfg(test)]
    fn idle_ids(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut at = self.idle.head;
        while at != NIL {
            let node = self.slots[at as usize].node.as_ref().unwrap();
            out.push(node.id.to_string());
            at = node.next;
        }
        out
    }

    /// The idle sessions of `peer`, least recently used first (tests).
    #[cfg(test)]
    fn peer_idle_ids(&self, peer: PeerKey) -> Vec<String> {
        let mut out = Vec::new();
        let mut at = self.peers.get(&peer).map_or(NIL, |p| p.idle.head);
        while at != NIL {
            let node = self.slots[at as usize].node.as_ref().unwrap();
            out.push(node.id.to_string());
            at = node.peer_next;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(last: u8) -> PeerKey {
        PeerKey::of(IpAddr::from([10, 0, 0, last]))
    }

    fn mint(
        held: &mut Held,
        id: &str,
        peer: Option<PeerKey>,
        max: usize,
        quota: usize,
    ) -> Vec<(String, Eviction)> {
        let (reservation, evicted) = held.reserve(peer, max, quota).unwrap();
        held.fill(reservation, Arc::from(id));
        evicted
            .into_iter()
            .map(|(id, why)| (id.to_string(), why))
            .collect()
    }

    #[test]
    fn peers_are_keyed_by_address_and_ipv6_by_its_64() {
        let a: IpAddr = "2001:db8:1:2:3:4:5:6".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::1".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(PeerKey::of(a), PeerKey::of(b));
        assert_ne!(PeerKey::of(a), PeerKey::of(c));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(PeerKey::of(mapped), peer(1));
        assert_ne!(peer(1), peer(2));
    }

    #[test]
    fn at_the_cap_the_least_recently_used_idle_session_goes_and_busy_ones_stay() {
        let mut held = Held::default();
        for id in ["a", "b", "c"] {
            assert!(mint(&mut held, id, None, 3, usize::MAX).is_empty());
        }
        assert_eq!(held.idle_ids(), ["a", "b", "c"]);
        // "a" is used (held and released): now the most recent. "b" is busy.
        let a = held.hold("a").unwrap();
        held.release(a);
        let b = held.hold("b").unwrap();
        assert_eq!(held.idle_ids(), ["c", "a"]);
        assert_eq!(
            mint(&mut held, "d", None, 3, usize::MAX),
            [("c".to_owned(), Eviction::Cap)]
        );
        assert_eq!(
            mint(&mut held, "e", None, 3, usize::MAX),
            [("a".to_owned(), Eviction::Cap)]
        );
        assert_eq!(held.count(), 3);
        // "b" busy twice over, "d" and "e" busy: nothing can go.
        let b2 = held.hold("b").unwrap();
        let d = held.hold("d").unwrap();
        let e = held.hold("e").unwrap();
        assert_eq!(held.reserve(None, 3, usize::MAX).err(), Some(Full::Cap));
        held.release(b);
        assert_eq!(held.reserve(None, 3, usize::MAX).err(), Some(Full::Cap));
        held.release(b2);
        assert_eq!(
            mint(&mut held, "f", None, 3, usize::MAX),
            [("b".to_owned(), Eviction::Cap)]
        );
        // A hold of a forgotten session is released into nothing.
        assert!(held.forget("d"));
        held.release(d);
        held.release(e);
        assert_eq!(held.idle_ids(), ["f", "e"]);
        assert!(held.hold("b").is_none());
    }

    #[test]
    fn at_a_peers_quota_its_own_session_goes_and_others_are_untouched() {
        let mut held = Held::default();
        assert!(mint(&mut held, "other", Some(peer(2)), 100, 2).is_empty());
        assert!(mint(&mut held, "anon", None, 100, 2).is_empty());
        assert!(mint(&mut held, "p1", Some(peer(1)), 100, 2).is_empty());
        assert!(mint(&mut held, "p2", Some(peer(1)), 100, 2).is_empty());
        assert_eq!(
            mint(&mut held, "p3", Some(peer(1)), 100, 2),
            [("p1".to_owned(), Eviction::PeerQuota)]
        );
        assert_eq!(held.peer_idle_ids(peer(1)), ["p2", "p3"]);
        let p2 = held.hold("p2").unwrap();
        let p3 = held.hold("p3").unwrap();
        assert_eq!(held.reserve(Some(peer(1)), 100, 2).err(), Some(Full::Peer));
        held.release(p2);
        assert_eq!(
            mint(&mut held, "p4", Some(peer(1)), 100, 2),
            [("p2".to_owned(), Eviction::PeerQuota)]
        );
        held.release(p3);
        assert_eq!(held.idle_ids(), ["other", "anon", "p4", "p3"]);
        assert_eq!(held.peers(), 2);
        // A peer at its quota at the cap: its own session makes the room.
        assert_eq!(
            mint(&mut held, "p5", Some(peer(1)), 4, 2),
            [("p4".to_owned(), Eviction::PeerQuota)]
        );
        assert_eq!(held.count(), 4);
    }

    #[test]
    fn peers_are_forgotten_with_their_last_session_and_reservations_count() {
        let mut held = Held::default();
        let (reservation, _) = held.reserve(Some(peer(1)), 2, 1).unwrap();
        assert_eq!(held.count(), 1);
        assert_eq!(held.peers(), 1);
        // Being minted: busy, so the quota refuses (nothing idle to give up).
        assert_eq!(held.reserve(Some(peer(1)), 2, 1).err(), Some(Full::Peer));
        held.unreserve(reservation);
        assert_eq!((held.count(), held.peers()), (0, 0));
        for n in 0..50u8 {
            mint(&mut held, &n.to_string(), Some(peer(n)), 10, 1);
            assert!(held.peers() <= held.count());
        }
        assert_eq!(held.count(), 10);
        for n in 40..50u8 {
            assert!(held.forget(&n.to_string()));
        }
        assert_eq!((held.count(), held.peers()), (0, 0));
        assert!(held.idle_ids().is_empty());
        // The slab is reused, not grown.
        let slots = held.slots.len();
        for n in 0..10u8 {
            mint(&mut held, &n.to_string(), None, 10, 1);
        }
        assert_eq!(held.slots.len(), slots);
    }
}
