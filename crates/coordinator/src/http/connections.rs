//! The connections being served, for the cap: who holds them, and which one to shed
//! when a new connection comes with the cap full.
//!
//! A connection may be shed while it was never authenticated and has no request in
//! flight (it sent nothing, or only part of its headers): that is all a client without
//! the token can hold; but only once it has waited
//! [`SHED_GRACE`](super::activity::SHED_GRACE): in a burst of clients that each send a
//! whole request, the server can look at a connection before its bytes come.
//!
//! The connection shed is the oldest of the peer that holds the most such connections
//! (counted whether or not their grace has ended), so a flood from one address
//! displaces its own connections first, never another peer's while it holds more: when
//! another peer's connection waited out its grace first, the new connection waits for
//! the flood's own. A peer is an IPv4 address or an IPv6 /64 (what one host is usually
//! given). With nothing to shed (every connection authenticated or in a request), the
//! next connection waits in the kernel's accept queue until one ends, as before (one
//! accepted just as the last place went waits unserved, holding its descriptor, until
//! a place frees).

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv6Addr};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;
use tokio::sync::futures::Notified;
use tokio::time::Instant;

use super::activity::Activity;

/// Most connections shed but not yet closed that the accept loop runs ahead of.
const SHEDDING_AHEAD: usize = 16;

/// The connections being served, in the order they came.
#[derive(Debug)]
pub(super) struct Connections {
    cap: usize,
    table: Mutex<Table>,
    /// Told when a connection ends or changes phase.
    room: Arc<Notify>,
}

#[derive(Debug, Default)]
struct Table {
    next: u64,
    /// By arrival: the first is the oldest.
    open: BTreeMap<u64, Entry>,
}

#[derive(Debug)]
struct Entry {
    peer: IpAddr,
    activity: Arc<Activity>,
}

/// A connection's place in [`Connections`]; dropping it (when the connection ends)
/// frees the place.
#[derive(Debug)]
pub(super) struct Admitted {
    id: u64,
    connections: Arc<Connections>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.connections.table().open.remove(&self.id);
        self.connections.room.notify_waiters();
    }
}

impl Connections {
    /// No connections yet, at most `cap` at once (at least one).
    pub(super) fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            cap: cap.max(1),
            table: Mutex::new(Table::default()),
            room: Arc::new(Notify::new()),
        })
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The activity of a new connection, whose changes wake [`Connections::room`].
    pub(super) fn activity(&self) -> Arc<Activity> {
        Arc::new(Activity::new(Arc::clone(&self.room)))
    }

    /// How many connections are open (shed ones not closed yet included).
    pub(super) fn len(&self) -> usize {
        self.table().open.len()
    }

    /// Completes once a new connection may be taken: fewer than the cap are held, or
    /// one of them may be shed for it (at once, or when a silent one's grace ends).
    pub(super) async fn room(&self) {
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.room_at(None) {
                Some(at) if at <= Instant::now() => return,
                until => changed_or(notified, until).await,
            }
        }
    }

    /// Completes once fewer than `count` connections are open.
    pub(super) async fn fewer_than(&self, count: usize) {
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.len() < count {
                return;
            }
            notified.await;
        }
    }

    /// When a new connection (from `newcomer`, when known) may be taken if nothing else
    /// changes: now while fewer than the cap are held, else when the connection to shed
    /// for it ([`victim`]) becomes sheddable; `None` when none will by itself (or too
    /// many shed ones are not closed yet).
    fn room_at(&self, newcomer: Option<IpAddr>) -> Option<Instant> {
        let table = self.table();
        let shedding = table
            .open
            .values()
            .filter(|entry| entry.activity.is_shed())
            .count();
        if shedding >= SHEDDING_AHEAD {
            return None;
        }
        if table.open.len().saturating_sub(shedding) < self.cap {
            return Some(Instant::now());
        }
        victim(&table, newcomer).map(|victim| victim.at)
    }

    #[cfg(test)]
    fn has_room(&self) -> bool {
        self.room_at(None).is_some_and(|at| at <= Instant::now())
    }

    /// Takes a new connection from `peer` (accepted already): at once when fewer than
    /// the cap are held or one can be shed for it ([`Connections::try_admit`]), else
    /// once one of them ends or may be shed.
    pub(super) async fn admit(
        self: &Arc<Self>,
        peer: IpAddr,
        activity: &Arc<Activity>,
    ) -> Admitted {
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(admitted) = self.try_admit(peer, activity) {
                return admitted;
            }
            changed_or(notified, self.room_at(Some(peer))).await;
        }
    }

    /// Takes a new connection from `peer` when fewer than the cap are held, or when one
    /// can be shed for it ([`victim`]); `None` when neither.
    pub(super) fn try_admit(
        self: &Arc<Self>,
        peer: IpAddr,
        activity: &Arc<Activity>,
    ) -> Option<Admitted> {
        let peer = peer_of(peer);
        let mut table = self.table();
        let held = table
            .open
            .values()
            .filter(|entry| !entry.activity.is_shed())
            .count();
        if held >= self.cap {
            shed_in(&table, Some(peer))?;
        }
        let id = table.next;
        table.next = table.next.wrapping_add(1);
        table.open.insert(
            id,
            Entry {
                peer,
                activity: Arc::clone(activity),
            },
        );
        drop(table);
        Some(Admitted {
            id,
            connections: Arc::clone(self),
        })
    }

    /// Sheds the connection [`victim`] names when its grace has ended (for out of file
    /// descriptors). Whether one was.
    pub(super) fn shed_one(&self) -> bool {
        shed_in(&self.table(), None).is_some()
    }
}

/// The connection to shed for a new one: of the peer holding the most connections that
/// may be shed now or once their grace ends (`newcomer` wins a tie: it is about to hold
/// one more; then the peer whose connection came first), the oldest whose grace has
/// ended, with `at` now; or, while none of that peer's has, `at` when the first will.
///
/// The peer is chosen before the grace is looked at: choosing among connections past
/// their grace only would shed another peer's older connection whenever the flood's
/// own came a moment later, which is exactly when a flood comes.
#[derive(Debug)]
struct Victim<'table> {
    peer: IpAddr,
    at: Instant,
    ready: Option<&'table Activity>,
}

/// One peer's connections that may be shed, now or later.
struct Holding<'table> {
    count: usize,
    first_id: u64,
    first_at: Instant,
    /// The oldest whose grace has ended.
    ready: Option<&'table Activity>,
}

fn victim(table: &Table, newcomer: Option<IpAddr>) -> Option<Victim<'_>> {
    let now = Instant::now();
    let mut holders: HashMap<IpAddr, Holding<'_>> = HashMap::new();
    for (id, entry) in &table.open {
        let Some(at) = entry.activity.sheddable_at() else {
            continue;
        };
        let ready = (at <= now).then_some(entry.activity.as_ref());
        holders
            .entry(entry.peer)
            .and_modify(|holding| {
                holding.count += 1;
                holding.first_at = holding.first_at.min(at);
                holding.ready = holding.ready.or(ready);
            })
            .or_insert(Holding {
                count: 1,
                first_id: *id,
                first_at: at,
                ready,
            });
    }
    let is_newcomer = |peer: &IpAddr| newcomer.is_some_and(|newcomer| newcomer == *peer);
    let (peer, holding) =
        holders
            .into_iter()
            .max_by(|(left_peer, left), (right_peer, right)| {
                left.count
                    .cmp(&right.count)
                    .then_with(|| is_newcomer(left_peer).cmp(&is_newcomer(right_peer)))
                    // The older connection first: a smaller id is greater here.
                    .then_with(|| right.first_id.cmp(&left.first_id))
            })?;
    Some(match holding.ready {
        Some(ready) => Victim {
            peer,
            at: now,
            ready: Some(ready),
        },
        None => Victim {
            peer,
            at: holding.first_at,
            ready: None,
        },
    })
}

/// Sheds the connection [`victim`] names when its grace has ended; returns its peer.
fn shed_in(table: &Table, newcomer: Option<IpAddr>) -> Option<IpAddr> {
    let victim = victim(table, newcomer)?;
    let peer = victim.peer;
    if victim.ready?.shed() {
        tracing::debug!(%peer, "shedding an unauthenticated idle connection for a new one");
        Some(peer)
    } else {
        None
    }
}

/// Who holds a connection from `ip`: the IPv4 address (an IPv4-mapped IPv6 one too), or
/// the IPv6 address's /64.
fn peer_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(Ipv6Addr::from(prefix))
            }
        },
    }
}

/// Waits until the table changes (`notified`, enabled before it was read) or, when
/// given, `until` (a silent connection's grace ends and it may be shed).
async fn changed_or(notified: Pin<&mut Notified<'_>>, until: Option<Instant>) {
    match until {
        Some(at) => {
            tokio::select! {
                () = notified => {}
                () = tokio::time::sleep_until(at) => {}
            }
        }
        None => notified.await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const FLOOD: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
    const OTHER: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));

    /// A connection admitted that has waited out its grace (sheddable).
    fn connect(connections: &Arc<Connections>, peer: IpAddr) -> (Arc<Activity>, Admitted) {
        let activity = connections.activity();
        let admitted = connections.try_admit(peer, &activity).unwrap();
        activity.waited(super::super::activity::SHED_GRACE);
        (activity, admitted)
    }

    #[test]
    fn silent_connections_are_not_shed_within_their_grace() {
        let connections = Connections::new(2);
        let first = connections.activity();
        let _a = connections.try_admit(FLOOD, &first).unwrap();
        let second = connections.activity();
        let _b = connections.try_admit(FLOOD, &second).unwrap();
        assert!(
            !connections.has_room(),
            "the cap is full of silent connections"
        );
        let at = connections.room_at(None).unwrap();
        assert!(at > Instant::now(), "room comes when the first grace ends");
        let late = connections.activity();
        assert!(connections.try_admit(FLOOD, &late).is_none());
        assert!(!first.is_shed() && !second.is_shed());
        second.waited(super::super::activity::SHED_GRACE);
        assert!(connections.has_room(), "its grace is over: it may be shed");
        let _c = connections.try_admit(FLOOD, &late).unwrap();
        assert!(second.is_shed() && !first.is_shed());
    }

    #[test]
    fn the_oldest_of_the_biggest_holder_is_shed() {
        let connections = Connections::new(3);
        let (other, _o) = connect(&connections, OTHER);
        let (first, _f1) = connect(&connections, FLOOD);
        let (second, _f2) = connect(&connections, FLOOD);
        assert!(!first.is_shed(), "below the cap nothing is shed");
        let (third, _f3) = connect(&connections, FLOOD);
        assert!(first.is_shed(), "the flood's oldest");
        assert!(
            !other.is_shed(),
            "the older connection of a smaller holder stays"
        );
        assert!(!second.is_shed() && !third.is_shed());
    }

    #[test]
    fn another_peer_past_its_grace_is_not_shed_while_the_flood_s_own_are_within_theirs() {
        let connections = Connections::new(3);
        // The other peer's connection came first, so its grace ends first.
        let (other, _o) = connect(&connections, OTHER);
        let first = connections.activity();
        let _f1 = connections.try_admit(FLOOD, &first).unwrap();
        let second = connections.activity();
        let _f2 = connections.try_admit(FLOOD, &second).unwrap();
        let late = connections.activity();
        assert!(connections.try_admit(FLOOD, &late).is_none());
        assert!(!other.is_shed(), "another peer's connection was shed");
        assert!(!connections.has_room());
        let at = connections.room_at(Some(FLOOD)).unwrap();
        assert!(
            at > Instant::now(),
            "room comes when the flood's grace ends"
        );
        // Its second connection's grace ends before its first's: that one goes.
        second.waited(super::super::activity::SHED_GRACE);
        let _f3 = connections.try_admit(FLOOD, &late).unwrap();
        assert!(second.is_shed() && !first.is_shed() && !other.is_shed());
    }

    #[test]
    fn a_tie_sheds_the_newcomer_s_own_oldest() {
        let connections = Connections::new(2);
        let (other, _o) = connect(&connections, OTHER);
        let (flood, _f) = connect(&connections, FLOOD);
        let (_, _f2) = connect(&connections, FLOOD);
        assert!(flood.is_shed() && !other.is_shed());
    }

    #[test]
    fn authenticated_connections_are_never_shed_and_a_full_cap_of_them_has_no_room() {
        let connections = Connections::new(2);
        let (first, _a) = connect(&connections, OTHER);
        let (second, _b) = connect(&connections, OTHER);
        first.authenticate();
        assert!(connections.has_room(), "the second may still be shed");
        second.authenticate();
        assert!(!connections.has_room());
        assert!(!connections.shed_one());
        let late = connections.activity();
        assert!(
            connections.try_admit(OTHER, &late).is_none(),
            "over the cap"
        );
    }

    #[tokio::test]
    async fn a_connection_accepted_over_the_cap_waits_for_a_place() {
        let connections = Connections::new(1);
        let (first, admitted) = connect(&connections, OTHER);
        first.authenticate();
        let late = connections.activity();
        let waiting = tokio::spawn({
            let connections = Arc::clone(&connections);
            async move { connections.admit(FLOOD, &late).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(admitted);
        let admitted = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(connections.len(), 1);
        drop(admitted);
    }

    #[test]
    fn an_ended_connection_frees_its_place() {
        let connections = Connections::new(1);
        let (first, admitted) = connect(&connections, OTHER);
        first.authenticate();
        assert!(!connections.has_room());
        drop(admitted);
        assert_eq!(connections.len(), 0);
        assert!(connections.has_room());
    }

    #[test]
    fn shed_connections_not_yet_closed_hold_the_loop_back() {
        let connections = Connections::new(1);
        let mut kept = Vec::new();
        for _ in 0..=SHEDDING_AHEAD {
            kept.push(connect(&connections, FLOOD));
        }
        assert!(
            !connections.has_room(),
            "{SHEDDING_AHEAD} shed, none closed yet"
        );
        kept.truncate(2);
        assert!(connections.has_room());
    }

    #[test]
    fn a_peer_is_an_ipv4_address_or_an_ipv6_64() {
        let mapped: IpAddr = "::ffff:10.0.0.2".parse().unwrap();
        assert_eq!(peer_of(mapped), FLOOD);
        let one: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let two: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let three: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(peer_of(one), peer_of(two));
        assert_ne!(peer_of(one), peer_of(three));
    }
}
