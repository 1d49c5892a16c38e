/*
 * recovery.pml: the recovery protocol of txn-recoveryd, for SPIN.
 *
 * What this is a model of, the abstraction of time, what is left out and how to run it:
 * model/README.md. The prose contract it follows: docs/state-machine.md.
 *
 * Actors, each a process; any of them may be delayed for any number of clock ticks
 * between two of its steps (interleaving), which is how an unbounded stall is modelled:
 *   app_transfer   the MongoDB manual transfer, steps 1-8 (tests/support/bank.cc)
 *   app_tagged     the tagged inserts application (tests/support/tagged_insert_app.cc)
 *   daemon         the sweep: read, decide (decision table), claim, the action's writes
 *   clock          the server's clock: one tick ages every transaction and lease
 *   failover       -DWLOSS: a replica-set failover loses a suffix of the writes that
 *                  were acknowledged without majority write concern
 *   (FLEET)        no process of its own: each daemon heartbeats its member record and
 *                  lists the live ones at the start of each sweep, and drives only its
 *                  share; the clock expires records that are not heartbeated
 *   checker        at every state: money at quiescent points, and "if every actor
 *                  crashed here and a fresh daemon swept after every threshold, would the
 *                  end-state invariants hold?" (computed on a copy: adds no state)
 *
 * Switches (-D on the spin command line, see scripts/model-check.sh):
 *   NTX=1|2 transactions, ND=1|2 daemons, TAGGED (tagged inserts instead of the manual
 *   transfer), UNCOND_FINISHING (the tagged inserts' step 3 as that application writes it:
 *   unconditional),
 *   NO_LOCAL_CHECK, NO_FENCE (the two layers of the lease-deadline rule),
 *   NO_DEADLINE_ASSERT (keep the stale writes, look only at money and the end state),
 *   NO_ORPHAN_SCAN (late writes undone only inside late_write_window),
 *   WLOSS, WK=1|2 (writes a failover can lose), APP_MAJORITY, DAEMON_MAJORITY,
 *   BUG_ROLLBACK_APPLIED (seeded bug b: a daemon rolls back an applied transaction),
 *   BEFORE_TAKEOVER (no pending -> resuming compare-and-set before a resume's first
 *   write: FIX_RESUMING off), BEFORE_TRACE (finish pulls without leaving a trace:
 *   FIX_FINISH_TRACE off), FIX_UNDO_OWN (a fix of the resume race that the model
 *   rejects; with BEFORE_TAKEOVER), NO_RESUME,
 *   FLEET (the daemons divide the transactions by their views of the membership, docs/
 *   fleet.md; with ND=2), BUG_SHARE_AS_PERMISSION (with FLEET, a seeded bug: a daemon
 *   drives what its share holds without claiming the lease),
 *   BEFORE_FINISH_READ (finish sends both of its requests, unread: the protocol before the
 *   finish read its participants), BUG_UNTRACE_BEFORE_DONE (seeded bug: the traces of a
 *   finish removed before the transaction is done), BUG_FINISH_STALE_READ (seeded bug: the
 *   read that picks a finish's request taken before the claim, and the pull trusting it),
 *   NO_UNTRACE (traces are never removed: what the money properties rest on without the
 *   lease-deadline rule, finding 8),
 *   OVERDUE (with FLEET: a transaction overdue, older than its threshold plus OA ticks, is
 *   in every share), OVERDUE_SIGHTED (with FLEET, instead of OVERDUE: the engine's rule, a
 *   transaction outside a daemon's share is in it once that daemon's sweeps have found it
 *   a candidate outside its share, every sweep, for OA ticks since the first of them),
 *   BUG_SIGHTING_PER_SWEEP (with OVERDUE_SIGHTED, seeded bug g: the sighting forgotten as
 *   every sweep starts), HUNG (with FLEET: daemon 0 is a member that heartbeats but never
 *   claims nor writes, daemon 1 is healthy; checks liveness, below), HUNG_LEAVES (with
 *   HUNG: the hung member leaves the watch out of its record once NFAIL of its sweeps
 *   failed), KLIVE=k (with HUNG: the liveness bound in ticks, default 5), COLD_START (with
 *   FLEET: no member record at the start; each member is seen once it has heartbeated),
 *   BEFORE_FOLD (the claim takes the lease only, and a resume takes over only when its read
 *   shows a step not applied: the engine before the claim folds; with it, FOLD_CANCEL,
 *   FOLD_ROLLBACK, FOLD_RESUME bring one fold back), FOLD_RESUMING_AGAIN (the claim of a
 *   resume read as resuming writes resuming again, instead of only taking the lease),
 *   FOLD_MIXED (daemon 0 folds, daemon ND - 1 does not: a fleet upgraded one member at a
 *   time), CLAIM_IN_FLIGHT (the claim sent, then reaching the server in a later step,
 *   fenced by the lease it takes),
 *   seeded bugs of the folds: BUG_FOLD_ROLLBACK_UNREAD, BUG_FOLD_CANCEL_UNREAD (the folded
 *   claim of a roll back, of a cancel, without the state and time as read),
 *   BUG_FOLD_RESUME_LEASE_ONLY (the take-over written into the lease, the state left
 *   pending), BUG_CLAIM_UNFENCED (with CLAIM_IN_FLIGHT: the claim without its fence),
 *   BUG_FOLD_LEASE_IGNORED (a folded claim without "lease absent or expired"),
 *   BUG_APPLY_UNREAD (with BEFORE_FOLD: the take-over only when a step is left to apply,
 *   but every apply sent whatever the read showed),
 *   BEFORE_READ_FOLDS (neither read fold: the protocol of the claim folds alone),
 *   BEFORE_FOLD_FINISH_READ, BEFORE_FOLD_ROLLBACK_READ (one of them off); the read folds,
 *   each also a switch with BEFORE_FOLD: FOLD_FINISH_READ (fold D: a finish reads its
 *   participants before the claim; a read with no marker makes the claim applied -> done
 *   itself), FOLD_ROLLBACK_READ (fold E: a roll back reads its participants before the
 *   claim; a read with no marker makes the claim pending -> cancelled; otherwise it undoes
 *   by that read, E1, as the engine does), ROLLBACK_UNDO_REREAD (fold E undoes by a read
 *   after the claim, under the lease, E2), READ_FOLD_MIXED (daemon 0 makes the read folds, daemon ND - 1 does
 *   not: the upgrade to them one member at a time),
 *   seeded bugs of the read folds: BUG_DONE_ANY_UNMARKED (the finish's claim made
 *   terminal once one participant shows no marker), BUG_DONE_LEASE_IGNORED (the terminal
 *   claim of a finish without "lease absent or expired"), BUG_CANCEL_DIRECT_UNREAD (the
 *   direct cancel of a roll back without the state and time as read); by hand only:
 *   BUG_DONE_DIRECT_UNREAD, BUG_CANCEL_DIRECT_MARKED, BUG_CANCEL_LEASE_IGNORED,
 *   BUG_DIRECT_UNFENCED,
 *   BUG_PARTICIPANTS_FIRST (model/README.md, finding 12),
 *   QUAR_RECORD (instead of the transfer: the quarantine's two writes, its record in the
 *   daemon's own collection and its mark on the transaction, with the repair, releases,
 *   crashes and the clock; properties count and repaired; model/README.md, "The
 *   quarantine records"), with it the seeded bugs BUG_QUAR_MARK_FIRST (p: the mark
 *   before the record) and BUG_QUAR_DELETE_UNREAD (q: the repair's delete without
 *   "markBy as read").
 *
 * Liveness (HUNG only; model/README.md, "Liveness"): a bounded property asserted by the
 * clock, under a fairness assumption that only HUNG makes: between two ticks the healthy
 * daemon sweeps every candidate of its share once, to the end of each action (the clock
 * waits for it). Stalls of the healthy daemon are then not explored; the other
 * configurations explore them, for safety.
 * Findings, and what each configuration shows: model/README.md.
 */

/* The protocol as the engine runs it has both changes the model asked of resume (model/
 * README.md, findings); BEFORE_TAKEOVER and BEFORE_TRACE each bring one old behaviour
 * back, so that the table shows the checker still finding what they lost. The claim
 * folds below and the read folds after them are the protocol the engine is to run;
 * BEFORE_READ_FOLDS is the one it runs, BEFORE_FOLD the one it ran before. */
#ifndef BEFORE_TAKEOVER
#define FIX_RESUMING
#endif
#ifndef BEFORE_TRACE
#define FIX_FINISH_TRACE
#endif
/* The claim folds (model/README.md, "The claim folds"), the default: the claim of a
 * cancel, a roll back or a resume is itself the action's first transition, in the same
 * compare-and-set that takes the lease. FOLD_CANCEL: initial -> cancelled, and no lease at
 * all; FOLD_ROLLBACK: -> canceling, with the lease; FOLD_RESUME: pending -> resuming, with
 * the lease, whether or not a step is left to apply (the take-over; a resume read as
 * resuming only takes the lease; there is no take-over to fold with BEFORE_TAKEOVER).
 * BEFORE_FOLD: the claim takes the lease only, as before; with it, -DFOLD_CANCEL,
 * -DFOLD_ROLLBACK or -DFOLD_RESUME brings one fold back alone. */
#ifndef BEFORE_FOLD
#define FOLD_CANCEL
#define FOLD_ROLLBACK
#ifdef FIX_RESUMING
#define FOLD_RESUME
#endif
#endif
#if defined(FOLD_RESUME) && !defined(FIX_RESUMING)
#error "FOLD_RESUME folds the take-over of FIX_RESUMING into the claim: not with BEFORE_TAKEOVER"
#endif
/* The read folds (model/README.md, "The read folds", finding 12), the default since the
 * claim folds' (BEFORE_READ_FOLDS: neither, the protocol of finding 11;
 * BEFORE_FOLD_FINISH_READ, BEFORE_FOLD_ROLLBACK_READ: one of them; BEFORE_FOLD: neither,
 * with the claim folds). FOLD_FINISH_READ (fold D): a finish reads its participants before
 * its claim, after the transaction; if that read shows no marker on any participant, the
 * claim is itself applied -> done (the outcome recorded, no lease) and only the traces the
 * read found are removed; otherwise the claim takes the lease and the finish sends the
 * requests that read calls for, without reading again. FOLD_ROLLBACK_READ (fold E): a roll
 * back reads its participants before its claim; if that read shows no marker, the claim is
 * itself pending -> cancelled (no lease); otherwise it writes canceling as the claim fold
 * does and undoes each step the read before the claim shows a marker of (E1, no second
 * read, as the engine does), or with ROLLBACK_UNDO_REREAD each step a read made after the
 * claim, under the lease, shows a marker of (E2, the engine before). The manual
 * transfer only: a tagged insert's finish and roll back read nothing. Without FIX_FINISH_
 * TRACE or with BEFORE_FINISH_READ there is no read of a finish to move: no fold D. */
#ifndef BEFORE_FOLD
#if defined(FIX_FINISH_TRACE) && !defined(BEFORE_FINISH_READ) && \
    !defined(BEFORE_READ_FOLDS) && !defined(BEFORE_FOLD_FINISH_READ)
#define FOLD_FINISH_READ
#endif
#if !defined(BEFORE_READ_FOLDS) && !defined(BEFORE_FOLD_ROLLBACK_READ)
#define FOLD_ROLLBACK_READ
#endif
#endif
#if defined(FOLD_ROLLBACK_READ) && !defined(ROLLBACK_UNDO_REREAD)
#define ROLLBACK_UNDO_PREREAD
#endif
#if defined(FOLD_FINISH_READ) && (!defined(FIX_FINISH_TRACE) || defined(BEFORE_FINISH_READ))
#error "FOLD_FINISH_READ moves the finish's read of its participants: not with BEFORE_TRACE or BEFORE_FINISH_READ"
#endif
#if defined(FOLD_ROLLBACK_READ) && !defined(FOLD_ROLLBACK)
#error "FOLD_ROLLBACK_READ extends the roll back's claim fold: not with BEFORE_FOLD (without FOLD_ROLLBACK)"
#endif
#ifndef NTX
#define NTX 1
#endif
#ifndef ND
#define ND 2
#endif
#ifndef WK
#define WK 1
#endif
#define NACC 2  /* accounts A0, A1 (transfer) */
#define NG 2    /* tagged collections (tagged insert): one insertMany each */
#define INIT_BAL 2 /* opening balance of each account */

/* Thresholds, in clock ticks (only their order matters): resume_after < rollback_after
 * (<= late_write_window), initial_timeout = rollback_after as by default. */
#define RA 1 /* resume_after */
#define RB 2 /* rollback_after */
#define IT 2 /* initial_timeout */
#define LW 3 /* late_write_window */
#define OA 1 /* overdue_after (FLEET: OVERDUE, OVERDUE_SIGHTED, HUNG): one tick past a state's
            * threshold, or past a member's first sighting */
#ifdef NO_ORPHAN_SCAN
#define AMAX LW /* ages saturate: every age >= AMAX behaves alike */
#elif defined(OVERDUE) || defined(HUNG)
#define AMAX (RB + OA) /* the largest threshold, then overdue */
#else
#define AMAX RB
#endif
/* The lease: expires = server now + LEASE; the daemon stops MARGIN before that. */
#define LEASE 2
#define MARGIN 1

/* Conformance (scripts/conformance.sh, docs/proof.md "Conformance"): each daemon step the
 * engine logs is an event EV(kind, step, value, matched) of the daemon that takes it. Off,
 * an event is nothing; model/trace_check.pml defines it to let a daemon take the step only
 * when it is the next line of the engine's trace. */
#ifndef EV
#define EV(k, s, x, o) skip
#endif
/* ENTER(k, s): the start of the atomic step whose event is EV(k, s, ...), enabled only when
 * that event is the next line of the trace, so that its guard and its effects stay one step
 * (nothing when off); TURN(k, s) the same condition, as a conjunct of a guard. */
#ifndef ENTER
#define ENTER(k, s)
#define TURN(k, s) (1)
#endif
#define E_READ 1    /* read the transaction: s state (as parsed), x the action decided */
#define E_PREREAD 2 /* the participants read before the claim: x the bits of RD_MK, RD_FIN */
#define E_CLAIM 3   /* the claim: s the state it writes (0: none), matched */
#define E_READP 4   /* a resume's read of its participants: x as E_PREREAD */
#define E_APPLY 5   /* apply step s, matched */
#define E_CANNOT 6  /* the read after an apply that matched nothing: x 1 = no marker */
#define E_UNDO 7    /* undo step s, matched */
#define E_FINISH 8  /* finish step s: x 1 the pull, 2 the undo of a duplicate, 0 nothing */
#define E_TO 9      /* transition to state s, matched */
#define E_UNTRACE 10 /* remove the trace of step s, matched */
#define E_LATE 11   /* the late-write check's undo of step s, matched */
#define E_RELEASE 12 /* release the lease, matched */
#define E_DEADLINE 13 /* the local check found the deadline passed: the daemon stops */

/* Transaction states as stored. Tagged inserts spell started/finishing/rollback/done as
 * PENDING/APPLIED/CANCELING/DONE and ends a rollback in DONE with outcome "rolled back". */
#define S_NONE 0 /* not inserted yet */
#define S_INITIAL 1
#define S_PENDING 2
#define S_APPLIED 3
#define S_DONE 4
#define S_CANCELING 5
#define S_CANCELLED 6
#define S_RESUMING 7 /* -DFIX_RESUMING only: a daemon has claimed to commit */
#define O_NONE 0 /* recovery.outcome */
#define O_COMMITTED 1
#define O_ROLLED_BACK 2

#define A_NONE 0
#define A_CANCEL 1
#define A_RESUME 2
#define A_ROLLBACK 3
#define A_FINISH 4
#define A_FINISH_ROLLBACK 5
#define A_LATE 6

/* ---------------------------------------------------------------- the database */
byte st[NTX];     /* state field */
byte age[NTX];    /* server now - time field, saturating at AMAX */
byte outc[NTX];   /* recovery.outcome (tagged insert reads a done's direction there) */
byte own[NTX];    /* recovery.lease.owner: 0 none, d+1 daemon d */
byte lexp[NTX];   /* recovery.lease.expires - server now + 1, saturating at 0: 0 = expired */
bool quar[NTX];   /* recovery.quarantine */
short bal[NACC] = INIT_BAL; /* transfer: balances */
bool mk[NTX * NACC]; /* transfer: txn t's marker on account a, at [t * NACC + a] */
#ifdef FIX_FINISH_TRACE
bool fin[NTX * NACC]; /* a daemon's finish pulled txn t's marker from account a */
#define FIN(t, a) fin[(t) * NACC + (a)]
#endif
byte grp[NTX * NG];  /* tagged: documents of txn t in collection g: 0 none, 1 tagged, 2 valid */

/* ---------------------------------------------------------------- ghosts */
byte net[NTX * 2];   /* times step s of txn t is applied, net of undos, at [t * 2 + s] */
bool cmt[NTX];       /* the transaction reached applied/finishing (or done) */
bool rbk[NTX];       /* the transaction reached canceling/rollback (or cancelled) */

/* ---------------------------------------------------------------- daemon registers */
bool fresh[NTX * ND]; /* daemon d's read of txn t still matches state+time: [t * ND + d] */
byte drem[ND];        /* daemon d: its own deadline - its clock, saturating at 0 */
#ifdef CLAIM_IN_FLIGHT
byte cx[ND];          /* daemon d's claim on its way: its expiry - server now + 1, or 0 */
#endif

#define MK(t, a) mk[(t) * NACC + (a)]
#define NET(t, s) net[(t) * 2 + (s)]
#define GRP(t, g) grp[(t) * NG + (g)]
#define FRESH(t, d) fresh[(t) * ND + (d)]

/* ---------------------------------------------------------------- the fleet (FLEET) */
/* docs/fleet.md. Each daemon has a member record, heartbeated on the server's clock; a
 * record not heartbeated for HBX ticks is expired. At the start of a sweep a daemon
 * heartbeats and lists the live members; that list is its view for the whole sweep, and
 * it may be stale by any number of ticks (the daemon may stall anywhere after it). The
 * transactions are divided by bucket: NB buckets, transaction t hashes to bucket t % NB,
 * and bucket b belongs to the live member at position b % n of the view in member order
 * (by stride). A share narrows what a daemon picks; it never replaces the claim. */
#ifdef FLEET
#define HBX 2 /* member expiry: two ticks without a heartbeat */
#define NB 2  /* buckets: with two transactions, one each; with one, bucket 1 is empty */
byte hb[ND];  /* member record of daemon d: heartbeat + expiry - server now, saturating at
               * 0 = expired. Removing an expired record changes no list (a list keeps
               * only records live on the server's clock), so removal is not modelled. */
byte vw[ND];  /* daemon d's view: bit m set = it listed member m live (daemons 0, ND - 1) */
byte drv[NTX]; /* ghost: the daemon (d + 1) that last began an action on txn t */
#ifdef HUNG_LEAVES
/* Member m's record lists the watch (docs/fleet.md, "Who shares a watch"): a member whose
 * sweeps of it fail leaves it out of its heartbeat, and the others stop counting it. */
#define NFAIL 1 /* failed sweeps before the hung member leaves the watch: the engine's */
bool lw[ND] = 1;
byte nfl;     /* the hung member's failed sweeps so far, up to NFAIL */
#define LISTS(m) (hb[m] > 0 && lw[m])
#else
#define LISTS(m) (hb[m] > 0)
#endif
/* The live members that list the watch, as a list read now on the server's clock. */
#define VIEW ((LISTS(0) -> 1 : 0) + ((ND > 1 && LISTS(ND - 1)) -> 2 : 0))
#define NMEM(v) (((v) & 1) + (((v) >> 1) & 1))
#define POS(v, d) (((d) > 0 && ((v) & 1)) -> 1 : 0) /* d's position in the view, by id */
#define SHARE(t, d) ((((t) % NB) % NMEM(vw[d])) == POS(vw[d], d))
/* Overdue: older, on the server's clock, than the threshold at which the decision table
 * first acts on its state plus overdue_after (OA). Such a transaction has waited for its
 * share's holder longer than a healthy holder takes; with -DOVERDUE it is in every share,
 * so that whichever live member sees it drives it (the claim still decides which one). */
#define DUE(s) \
  ((s) == S_INITIAL -> IT : \
  (((s) == S_PENDING && !RESUMABLE) -> RB : RA))
#define OVERDUE_AT(t) (age[t] >= DUE(PST(t)) + OA)
#if defined(OVERDUE) && defined(OVERDUE_SIGHTED)
#error "OVERDUE and OVERDUE_SIGHTED are two overdue rules: one at a time"
#endif
#ifdef OVERDUE
#define IN_SHARE(t, d) (SHARE(t, d) || OVERDUE_AT(t))
#define SWEEP_SEES(t) VISITS(t)
#define SWEEP_SEES_ALL VISITS_ALL
#elif defined(OVERDUE_SIGHTED)
/* Overdue by the member's own sighting (the engine's rule, lib/src/engine/sweeper.cc,
 * SweepMemory): daemon d remembers, per transaction, when its sweep first found it a
 * candidate outside its share, and forgets it when a sweep finds it no longer a candidate
 * or in its share (driven, moved on, or the view changed). The age of the transaction
 * plays no part: a backlog older than any threshold is divided as long as its holders
 * drain it. SG(t, d): 0 not sighted; k > 0 first sighted k - 1 ticks ago, saturating at
 * OA + 1 (the clock counts); in d's share once SG(t, d) > OA: OA ticks since the first
 * sighting, on the server's clock. The sweep checks the sighting as it was (a first
 * sighting, now, is never overdue), then records what this sweep found. */
byte sg[NTX * ND];
#define SG(t, d) sg[(t) * ND + (d)]
#ifdef BUG_SIGHTING_PER_SWEEP
/* seeded bug g: the sightings are the sweep's own, forgotten as every sweep starts; what
 * this sweep finds outside its share is sighted now, so never OA ticks ago */
#define KEPT(t, d) ((SG(t, d) > 0) -> 1 : 0)
#define FIRST_SIGHTING(t, d) (1)
#else
#define KEPT(t, d) SG(t, d)
#define FIRST_SIGHTING(t, d) (SG(t, d) == 0)
#endif
#define IN_SHARE(t, d) (SHARE(t, d) || KEPT(t, d) > OA)
#define SIGHTS(t) \
  SG(t, me) = ((ELIGIBLE(t) && !SHARE(t, me)) -> ((KEPT(t, me) > 0) -> KEPT(t, me) : 1) : 0)
/* The engine's sweep classifies each candidate once: in the share (driven: forgotten),
 * outside it (sighted, and driven if overdue), and forgets what it did not find. The
 * model's sweep is a run of batches of one, each listing the view afresh, so a batch
 * records the transaction it takes and every one it passes over (outside what it would
 * take, or no candidate); one it would take but leaves to a later batch keeps its
 * sighting until a batch takes it or passes it over. (Recorded by every batch, a
 * transaction in the share under one view but taken by no batch would lose its sighting
 * and be found outside the share, unsighted, under the next view: a holder whose record
 * comes and goes would keep it stuck, which the engine, driving what it finds in its
 * share in the same sweep, does not do.) */
#define PASSES(u) (!(ELIGIBLE(u) && IN_SHARE(u, me)))
#define SIGHTS_IF(u, t) \
  if \
  :: (u) == (t) || PASSES(u) -> \
    if \
    :: ELIGIBLE(u) && !SHARE(u, me) && FIRST_SIGHTING(u, me) -> \
      printf("MSC: daemon %d: sights txn %d outside its share, first\n", me, u) \
    :: ELIGIBLE(u) && !SHARE(u, me) && (u) == (t) -> \
      printf("MSC: daemon %d: takes txn %d of another share, sighted %d+ ticks ago\n", me, \
        u, KEPT(u, me) - 1) \
    :: else -> skip \
    fi; \
    SIGHTS(u) \
  :: else -> skip \
  fi
#define SIGHTS_ALL(t) SIGHTS_IF(0, t); if :: NTX > 1 -> SIGHTS_IF(NTX - 1, t) :: else -> skip fi
#define SWEEP_SEES(t) SIGHTS_ALL(t); VISITS(t)
#define SWEEP_SEES_ALL SIGHTS_ALL(NTX); VISITS_ALL
#else
#define IN_SHARE(t, d) SHARE(t, d)
#define SWEEP_SEES(t) VISITS(t)
#define SWEEP_SEES_ALL VISITS_ALL
#endif
#define BEGIN_DRIVE drv[t] = me + 1
/* Property (exclusive): a write of a daemon's action lands only while no other daemon has
 * begun an action on that transaction since this one began its own: one driver at a time,
 * whatever the views of the membership. */
#ifdef NO_DEADLINE_ASSERT
#define DRIVER_OK skip
#else
#define DRIVER_OK \
  if \
  :: drv[t] != me + 1 -> \
    printf("MSC: daemon %d: writes txn %d, which daemon %d now drives\n", me, t, drv[t] - 1) \
  :: else -> skip \
  fi; \
  assert(drv[t] == me + 1)
#endif
#ifdef HUNG
/* Liveness: stk[t] counts the clock's ticks since transaction t was first overdue, until it
 * is terminal (a transaction moved meanwhile still counts: it has not been recovered). The
 * clock asserts stk[t] <= KLIVE. The fairness assumption: the healthy member's sweep reads
 * every candidate of its share and acts on each once, within a tick. The model's sweep is
 * one batch of one transaction, so an engine's sweep is a run of them: vis (bit t) says
 * that since the last tick the healthy daemon has picked transaction t or found it outside
 * what it would pick, and rest that it is between two batches. The clock ticks only when
 * both say so, then clears vis. */
#ifndef KLIVE
#define KLIVE 5
#endif
byte stk[NTX];
bool rest;
byte vis;
#define ALLV ((1 << NTX) - 1)
#define MINE(t) (ELIGIBLE(t) && IN_SHARE(t, me))
#define VISITS(t) \
  vis = vis | (1 << (t)) | (MINE(0) -> 0 : 1) | ((NTX > 1 && !MINE(NTX - 1)) -> 2 : 0)
#define VISITS_ALL vis = ALLV /* a sweep that found nothing of its share to do */
#define STUCK(t) (st[t] != S_NONE && !quar[t] && !TERMINAL(PST(t)))
#define TICK_OK (rest && vis == ALLV)
#define RESTS(r) rest = r
#else
#define VISITS(t) skip
#define VISITS_ALL skip
#define TICK_OK (1)
#define RESTS(r) skip
#endif
#else
#define VISITS(t) skip
#define VISITS_ALL skip
#define SWEEP_SEES(t) VISITS(t)
#define SWEEP_SEES_ALL VISITS_ALL
#define SHARE(t, d) (1)
#define IN_SHARE(t, d) (1)
#define BEGIN_DRIVE skip
#define DRIVER_OK skip
#define TICK_OK (1)
#define RESTS(r) skip
#endif
/* Transfer t moves 1 from account t%2 to the other: two transactions go opposite ways. */
#define ACC(t, s) (((t) + (s)) % 2)
#define DELTA(s) ((s) == 0 -> -1 : 1)
/* The state as the daemon's parser reads it: a done whose recovery.outcome says rolled
 * back is a cancelled one (tagged inserts have no cancelled spelling). */
#define PST(t) ((st[t] == S_DONE && outc[t] == O_ROLLED_BACK) -> S_CANCELLED : st[t])
#define TERMINAL(s) ((s) == S_DONE || (s) == S_CANCELLED)

/* ---------------------------------------------------------------- the decision table */
#ifdef TAGGED
#define TAGGED_PROFILE 1
#else
#define TAGGED_PROFILE 0
#endif
#if defined(TAGGED) || defined(NO_RESUME)
#define RESUMABLE 0 /* a started tagged insert is never resumed; -DNO_RESUME: nor a transfer */
#else
#define RESUMABLE 1
#endif
#ifdef BUG_ROLLBACK_APPLIED
#define DECIDE_APPLIED(a) ((a) >= RB -> A_ROLLBACK : ((a) >= RA -> A_FINISH : A_NONE))
#else
#define DECIDE_APPLIED(a) ((a) >= RA -> A_FINISH : A_NONE)
#endif
#ifdef NO_ORPHAN_SCAN
#define LATE_AGE(a) ((a) >= RA && (a) < LW)
#else
#define LATE_AGE(a) (1) /* the orphan scan finds a late write whatever its age */
#endif
#define DECIDE(s, a) \
  ((s) == S_RESUMING -> ((a) >= RA -> A_RESUME : A_NONE) : \
  ((s) == S_INITIAL -> ((a) >= IT -> A_CANCEL : A_NONE) : \
  ((s) == S_PENDING -> ((a) >= RB -> A_ROLLBACK : (((a) >= RA && RESUMABLE) -> A_RESUME : A_NONE)) : \
  ((s) == S_APPLIED -> DECIDE_APPLIED(a) : \
  ((s) == S_CANCELING -> ((a) >= RA -> A_FINISH_ROLLBACK : A_NONE) : \
  (TERMINAL(s) -> (LATE_AGE(a) -> A_LATE : A_NONE) : A_NONE))))))

/* Something for a late-write check to find (a check that finds nothing writes nothing). */
#ifdef TAGGED
#define LEFTOVER(t) (GRP(t, 0) == 1 || GRP(t, NG - 1) == 1)
#elif defined(FIX_FINISH_TRACE)
/* a marker, or the trace of a finish: the late-write check removes what it finds of both */
#define LEFTOVER(t) (MK(t, 0) || MK(t, 1) || FIN(t, 0) || FIN(t, 1))
#else
#define LEFTOVER(t) (MK(t, 0) || MK(t, 1))
#endif
#define ELIGIBLE(t) \
  (st[t] != S_NONE && !quar[t] && DECIDE(PST(t), age[t]) != A_NONE && \
   (DECIDE(PST(t), age[t]) != A_LATE || LEFTOVER(t)))

/* ---------------------------------------------------------------- invariants */
#define NO_MARKERS (!mk[0] && !mk[1] && (NTX < 2 || (!mk[2] && !mk[3])))
#define TOTAL_OK (bal[0] + bal[1] == NACC * INIT_BAL)
#define NET_OK(t) (NET(t, 0) == cmt[t] && NET(t, 1) == cmt[t])
#define NETS_OK (NET_OK(0) && (NTX < 2 || NET_OK(NTX - 1)))
/* no transaction both committed and rolled back */
#define ONE_WAY(t) assert(!(cmt[t] && rbk[t]))
#define GHOST_STATE(t, s)                                          \
  if                                                               \
  :: (s) == S_APPLIED || (s) == S_DONE -> cmt[t] = 1               \
  :: (s) == S_CANCELING || (s) == S_CANCELLED -> rbk[t] = 1        \
  :: else -> skip                                                  \
  fi;                                                              \
  ONE_WAY(t)

/* ---------------------------------------------------------------- write loss (WLOSS) */
/* A log of the last WK acknowledged writes not yet majority-committed, each with the
 * document as it was before it. A write with majority write concern commits every write
 * before it (the oplog is a sequence), so it empties the log; a failover restores the
 * documents of a suffix of the log. Documents: K_TXN a transaction, K_ACC an account,
 * K_GRP the tagged documents of one transaction in one collection. */
#define K_TXN 1
#define K_ACC 2
#define K_GRP 3
#ifdef APP_MAJORITY
#define AMAJ 1
#else
#define AMAJ 0
#endif
#ifdef DAEMON_MAJORITY
#define DMAJ 1
#else
#define DMAJ 0
#endif

#ifdef WLOSS
typedef LogE {
  byte kind;
  byte id;
  byte s0; byte s1; byte s2; byte s3; byte s4; byte s5; byte s6;
  short b;
};
LogE lg[WK];
byte lglen;
byte nfail;

inline log_copy(i, j) {
  lg[i].kind = lg[j].kind; lg[i].id = lg[j].id;
  lg[i].s0 = lg[j].s0; lg[i].s1 = lg[j].s1; lg[i].s2 = lg[j].s2; lg[i].s3 = lg[j].s3;
  lg[i].s4 = lg[j].s4; lg[i].s5 = lg[j].s5; lg[i].s6 = lg[j].s6; lg[i].b = lg[j].b
}
inline log_slot() {
  if
  :: lglen == WK -> /* the oldest has been replicated meanwhile */
    if
    :: WK > 1 -> log_copy(0, WK - 1)
    :: else -> skip
    fi;
    lglen--
  :: else -> skip
  fi
}
inline LOG_TXN(t, maj) {
  if
  :: maj -> lglen = 0
  :: else ->
    log_slot();
    lg[lglen].kind = K_TXN; lg[lglen].id = t;
    lg[lglen].s0 = st[t]; lg[lglen].s1 = age[t]; lg[lglen].s2 = outc[t];
    lg[lglen].s3 = own[t]; lg[lglen].s4 = lexp[t]; lg[lglen].s5 = cmt[t] + 2 * rbk[t];
    lg[lglen].s6 = quar[t]; lg[lglen].b = 0;
    lglen++
  fi
}
inline LOG_ACC(a, maj) {
  if
  :: maj -> lglen = 0
  :: else ->
    log_slot();
    lg[lglen].kind = K_ACC; lg[lglen].id = a; lg[lglen].b = bal[a];
    lg[lglen].s0 = MK(0, a); lg[lglen].s1 = MK(NTX - 1, a);
    /* the ghost step counters of this account: step (t + s) % 2 == a */
    lg[lglen].s2 = NET(0, a); lg[lglen].s3 = NET(NTX - 1, (a + NTX - 1) % 2);
#ifdef FIX_FINISH_TRACE
    lg[lglen].s4 = FIN(0, a); lg[lglen].s5 = FIN(NTX - 1, a);
#else
    lg[lglen].s4 = 0; lg[lglen].s5 = 0;
#endif
    lg[lglen].s6 = 0;
    lglen++
  fi
}
inline LOG_GRP(t, g, maj) {
  if
  :: maj -> lglen = 0
  :: else ->
    log_slot();
    lg[lglen].kind = K_GRP; lg[lglen].id = t * NG + g; lg[lglen].s0 = grp[t * NG + g];
    lg[lglen].s1 = 0; lg[lglen].s2 = 0; lg[lglen].s3 = 0; lg[lglen].s4 = 0;
    lg[lglen].s5 = 0; lg[lglen].s6 = 0; lg[lglen].b = 0;
    lglen++
  fi
}
inline restore(i) {
  if
  :: lg[i].kind == K_TXN ->
    st[lg[i].id] = lg[i].s0; age[lg[i].id] = lg[i].s1; outc[lg[i].id] = lg[i].s2;
    own[lg[i].id] = lg[i].s3; lexp[lg[i].id] = lg[i].s4;
    cmt[lg[i].id] = lg[i].s5 % 2; rbk[lg[i].id] = lg[i].s5 / 2; quar[lg[i].id] = lg[i].s6
  :: lg[i].kind == K_ACC ->
    bal[lg[i].id] = lg[i].b; MK(0, lg[i].id) = lg[i].s0; MK(NTX - 1, lg[i].id) = lg[i].s1;
    NET(0, lg[i].id) = lg[i].s2; NET(NTX - 1, (lg[i].id + NTX - 1) % 2) = lg[i].s3;
#ifdef FIX_FINISH_TRACE
    FIN(0, lg[i].id) = lg[i].s4; FIN(NTX - 1, lg[i].id) = lg[i].s5;
#endif
    skip
  :: lg[i].kind == K_GRP -> grp[lg[i].id] = lg[i].s0
  fi
}
/* A write with majority write concern returns once every write before it in the oplog is
 * majority-committed; so does one that matched nothing (MongoDB then waits for the
 * latest optime). */
#define MAJ_ACK(maj) if :: maj -> lglen = 0 :: else -> skip fi
#else
#define MAJ_ACK(maj) skip
#define LOG_TXN(t, maj) skip
#define LOG_ACC(a, maj) skip
#define LOG_GRP(t, g, maj) skip
#endif

/* A write to a transaction's state and time: every daemon's read of it is now stale. */
inline touched(t) {
  FRESH(t, 0) = 0;
  if
  :: ND > 1 -> FRESH(t, ND - 1) = 0
  :: else -> skip
  fi
}

/* ---------------------------------------------------------------- the clock */
proctype clock() {
  byte i;
  do
  :: d_step {
       TICK_OK;
       printf("MSC: tick\n");
       i = 0;
       do
       :: i < NTX ->
         if :: age[i] < AMAX -> age[i]++ :: else -> skip fi;
         if :: lexp[i] > 0 -> lexp[i]-- :: else -> skip fi;
         i++
       :: else -> break
       od;
       i = 0;
       do
       :: i < ND -> if :: drem[i] > 0 -> drem[i]-- :: else -> skip fi;
#ifdef CLAIM_IN_FLIGHT
         if :: cx[i] > 0 -> cx[i]-- :: else -> skip fi;
#endif
#ifdef FLEET
         if :: hb[i] > 0 -> hb[i]-- :: else -> skip fi;
#endif
#ifdef OVERDUE_SIGHTED
         /* one tick more since daemon i first sighted each transaction */
         if :: SG(0, i) > 0 && SG(0, i) <= OA -> SG(0, i)++ :: else -> skip fi;
         if
         :: NTX > 1 && SG(NTX - 1, i) > 0 && SG(NTX - 1, i) <= OA -> SG(NTX - 1, i)++
         :: else -> skip
         fi;
#endif
         i++
       :: else -> break
       od;
#ifdef HUNG
       /* Property (liveness): a transaction overdue reaches a terminal state within KLIVE
        * ticks of being first found overdue. */
       i = 0;
       do
       :: i < NTX ->
         if
         :: STUCK(i) && (stk[i] > 0 || OVERDUE_AT(i)) -> stk[i]++
         :: else -> stk[i] = 0
         fi;
         if
         :: stk[i] > KLIVE ->
           printf("MSC: txn %d overdue for %d ticks, not terminal\n", i, stk[i])
         :: else -> skip
         fi;
         assert(stk[i] <= KLIVE);
         i++
       :: else -> break
       od;
       vis = 0;
#endif
#ifdef WLOSS
       i = 0;
       do
       :: i < lglen ->
         if
         :: lg[i].kind == K_TXN ->
           if :: lg[i].s1 < AMAX -> lg[i].s1++ :: else -> skip fi;
           if :: lg[i].s4 > 0 -> lg[i].s4-- :: else -> skip fi
         :: else -> skip
         fi;
         i++
       :: else -> break
       od;
#endif
       i = 0
     }
  od
}

#ifdef WLOSS
/* ---------------------------------------------------------------- failover */
proctype failover() {
  byte k, i;
  do
  :: atomic {
       nfail < 1 && lglen > 0 ->
       if
       :: k = 1
       :: lglen > 1 -> k = 2
       fi;
       printf("MSC: failover loses the last %d write(s)\n", k);
       i = lglen;
       do
       :: k > 0 -> i--; restore(i); k--
       :: else -> break
       od;
       lglen = 0; nfail++; i = 0;
       /* documents went back to earlier versions: treat every read as stale */
       i = 0;
       do
       :: i < NTX * ND -> fresh[i] = 0; i++
       :: else -> break
       od;
       i = 0
     }
  od
}
#endif

/* ---------------------------------------------------------------- MongoDB manual transfer */
proctype app_transfer(byte t) {
  bool ok;
  /* 1. insert {state: initial, lastModified: now} */
  atomic { LOG_TXN(t, AMAJ); st[t] = S_INITIAL; age[t] = 0; MAJ_ACK(AMAJ); printf("MSC: app %d: 1 insert initial\n", t) }
  /* 2. initial -> pending (CAS); no match: the application stops */
  atomic {
    if
    :: st[t] == S_INITIAL -> LOG_TXN(t, AMAJ); st[t] = S_PENDING; age[t] = 0; touched(t); ok = 1
    :: else -> ok = 0
    fi;
    MAJ_ACK(AMAJ); printf("MSC: app %d: 2 initial->pending %d\n", t, ok)
  }
  if :: !ok -> goto stop :: else -> skip fi;
  /* 3. debit the source, guarded by the marker absent, pushing the marker */
  atomic {
    if
    :: !MK(t, ACC(t, 0)) -> LOG_ACC(ACC(t, 0), AMAJ);
       bal[ACC(t, 0)]--; MK(t, ACC(t, 0)) = 1; NET(t, 0)++
    :: else -> skip
    fi;
    MAJ_ACK(AMAJ); printf("MSC: app %d: 3 debit\n", t)
  }
  /* 4. credit the destination, likewise */
  atomic {
    if
    :: !MK(t, ACC(t, 1)) -> LOG_ACC(ACC(t, 1), AMAJ);
       bal[ACC(t, 1)]++; MK(t, ACC(t, 1)) = 1; NET(t, 1)++
    :: else -> skip
    fi;
    MAJ_ACK(AMAJ); printf("MSC: app %d: 4 credit\n", t)
  }
  /* 5. pending -> applied (CAS) */
  atomic {
    if
    :: st[t] == S_PENDING -> LOG_TXN(t, AMAJ); st[t] = S_APPLIED; age[t] = 0; touched(t);
       GHOST_STATE(t, S_APPLIED); ok = 1
    :: else -> ok = 0
    fi;
    MAJ_ACK(AMAJ); printf("MSC: app %d: 5 pending->applied %d\n", t, ok)
  }
  if :: !ok -> goto stop :: else -> skip fi;
  /* 6. pull the marker from the source; 7. from the destination */
  atomic {
    if :: MK(t, ACC(t, 0)) -> LOG_ACC(ACC(t, 0), AMAJ); MK(t, ACC(t, 0)) = 0 :: else -> skip fi;
    MAJ_ACK(AMAJ); printf("MSC: app %d: 6 pull source marker\n", t)
  }
  atomic {
    if :: MK(t, ACC(t, 1)) -> LOG_ACC(ACC(t, 1), AMAJ); MK(t, ACC(t, 1)) = 0 :: else -> skip fi;
    MAJ_ACK(AMAJ); printf("MSC: app %d: 7 pull destination marker\n", t)
  }
  /* 8. applied -> done (CAS) */
  atomic {
    if
    :: st[t] == S_APPLIED -> LOG_TXN(t, AMAJ); st[t] = S_DONE; age[t] = 0; touched(t);
       GHOST_STATE(t, S_DONE)
    :: else -> skip
    fi;
    MAJ_ACK(AMAJ); printf("MSC: app %d: 8 applied->done\n", t)
  }
stop:
  ok = 0
}

/* ---------------------------------------------------------------- tagged inserts */
proctype app_tagged(byte t) {
  bool ok;
  byte g;
  /* 1. insert {status: started, lastUpdate: now} */
  atomic { LOG_TXN(t, AMAJ); st[t] = S_PENDING; age[t] = 0; MAJ_ACK(AMAJ); printf("MSC: app %d: 1 insert started\n", t) }
  /* 2. insertMany of tagged documents, one per collection */
  g = 0;
  do
  :: g < NG -> atomic { LOG_GRP(t, g, AMAJ); GRP(t, g) = 1; MAJ_ACK(AMAJ); printf("MSC: app %d: 2 insert tagged %d\n", t, g); g++ }
  :: else -> break
  od;
  g = 0;
  /* 3. -> finishing */
  atomic {
#ifdef UNCOND_FINISHING
    /* as the application writes it: {_id} -> status finishing, whatever it is now */
    LOG_TXN(t, AMAJ); st[t] = S_APPLIED; age[t] = 0; touched(t); GHOST_STATE(t, S_APPLIED); ok = 1;
#else
    /* as docs/state-machine.md asks: {_id, status: started}; no match: stop */
    if
    :: st[t] == S_PENDING -> LOG_TXN(t, AMAJ); st[t] = S_APPLIED; age[t] = 0; touched(t);
       GHOST_STATE(t, S_APPLIED); ok = 1
    :: else -> ok = 0
    fi;
#endif
    MAJ_ACK(AMAJ); printf("MSC: app %d: 3 ->finishing %d\n", t, ok)
  }
  if :: !ok -> goto stop :: else -> skip fi;
  /* 4. untag: updateMany({tx: t}, {$unset: tx, $set: {valid: true}}), per collection */
  do
  :: g < NG -> atomic {
       if :: GRP(t, g) == 1 -> LOG_GRP(t, g, AMAJ); GRP(t, g) = 2 :: else -> skip fi;
       MAJ_ACK(AMAJ); printf("MSC: app %d: 4 untag %d\n", t, g); g++ }
  :: else -> break
  od;
  g = 0;
  /* 5. {_id} -> status done (unconditional, as the application does) */
  atomic {
    LOG_TXN(t, AMAJ); st[t] = S_DONE; age[t] = 0; touched(t);
    if :: outc[t] != O_ROLLED_BACK -> GHOST_STATE(t, S_DONE) :: else -> skip fi;
    MAJ_ACK(AMAJ); printf("MSC: app %d: 5 ->done\n", t)
  }
stop:
  ok = 0
}

/* ---------------------------------------------------------------- the daemon */
/* The lease-deadline rule. Layer 1, the local check before every write under the lease:
 * its own step, so that the clock can tick between it and the write. Layer 2, the fence
 * in the write's filter ($$NOW < expires - margin), atomic with the write. */
#if defined(NO_LOCAL_CHECK) || defined(BUG_SHARE_AS_PERMISSION)
#define LOCAL_CHECK() skip
#else
#define LOCAL_CHECK() \
  if \
  :: drem[me] == 0 -> printf("MSC: daemon %d: deadline passed, stops\n", me); \
     EV(E_DEADLINE, 0, 0, 1); goto fail \
  :: else -> skip \
  fi
#endif
#if defined(NO_FENCE) || defined(BUG_SHARE_AS_PERMISSION)
#define FENCE (1)
#else
#define FENCE (drem[me] > 0)
#endif
/* Property: no write made under the lease lands after the lease deadline. */
#if defined(NO_DEADLINE_ASSERT) || defined(BUG_SHARE_AS_PERMISSION)
#define DEADLINE_OK skip
#else
#define DEADLINE_OK assert(drem[me] > 0)
#endif
#ifdef BUG_SHARE_AS_PERMISSION
/* Seeded bug: the share taken as permission. No claim, so no lease: nothing to check
 * locally, no fence, no lease owner in a transition's filter, nothing to renew; the state
 * as known is the only guard of a transition, the marker of a participant write. */
#define OWNER_OK (1)
#define RENEW skip
#else
#define OWNER_OK (own[t] == me + 1)
#define RENEW lexp[t] = LEASE + 1; drem[me] = LEASE - MARGIN
#endif

/* The claim folds. FOLDS(a): daemon me's claim for action a is that action's first
 * transition (-DFOLD_MIXED: only daemon 0 folds, daemon ND - 1 claims as before, as in a
 * fleet upgraded one member at a time). FOLD_TO(a): the state it writes. */
#ifdef BUG_SHARE_AS_PERMISSION
#define FOLDER (0) /* no claim, so nothing to fold the first transition into */
#elif defined(FOLD_MIXED)
#define FOLDER (me == 0)
#else
#define FOLDER (1)
#endif
#ifdef FOLD_CANCEL
#define FOLDS_CANCEL FOLDER
#else
#define FOLDS_CANCEL 0
#endif
#ifdef FOLD_ROLLBACK
#define FOLDS_ROLLBACK FOLDER
#else
#define FOLDS_ROLLBACK 0
#endif
#ifdef FOLD_RESUME
#define FOLDS_RESUME FOLDER
#else
#define FOLDS_RESUME 0
#endif
/* A resume read as resuming has been taken over already: its claim only takes the lease,
 * as the engine folds it. -DFOLD_RESUMING_AGAIN: it writes resuming again, with the time. */
#ifdef FOLD_RESUMING_AGAIN
#define RESUME_MOVES (1)
#else
#define RESUME_MOVES (raw == S_PENDING)
#endif
#define FOLDS(a) \
  (((a) == A_CANCEL && FOLDS_CANCEL) || ((a) == A_ROLLBACK && FOLDS_ROLLBACK) || \
   ((a) == A_RESUME && FOLDS_RESUME && RESUME_MOVES))
#define FOLD_TO(a) \
  ((a) == A_CANCEL -> S_CANCELLED : ((a) == A_ROLLBACK -> S_CANCELING : S_RESUMING))
/* The read folds (D, E). READ_FOLDER: daemon me makes them (-DREAD_FOLD_MIXED: only
 * daemon 0, daemon ND - 1 makes the claim folds alone, as the engine does now; with
 * -DFOLD_MIXED daemon ND - 1 makes no fold at all). Each reads the participants before
 * the claim (PRE_READ); CLAIM_DONE, CLAIM_CANCELS_DIRECT: that read ends the action in
 * the claim. */
#ifdef READ_FOLD_MIXED
#define READ_FOLDER (FOLDER && me == 0)
#else
#define READ_FOLDER FOLDER
#endif
#if defined(FOLD_FINISH_READ) && !defined(TAGGED)
#define FOLDS_FINISH_READ READ_FOLDER
#else
#define FOLDS_FINISH_READ 0
#endif
#if defined(FOLD_ROLLBACK_READ) && !defined(TAGGED)
#define FOLDS_ROLLBACK_READ (READ_FOLDER && FOLDS_ROLLBACK)
#else
#define FOLDS_ROLLBACK_READ 0
#endif
#ifdef BUG_FINISH_STALE_READ
#define STALE_FINISH_READ 1 /* seeded bug e: the read before the claim, the pull trusting it */
#else
#define STALE_FINISH_READ 0
#endif
#define PRE_READ \
  ((act == A_FINISH && (FOLDS_FINISH_READ || STALE_FINISH_READ)) || \
   (act == A_ROLLBACK && FOLDS_ROLLBACK_READ))
#ifdef BUG_DONE_ANY_UNMARKED
/* seeded bug: the finish's claim made terminal once one participant shows no marker */
#define NO_MARK_READ (!RD_MK(0) || !RD_MK(1))
#else
#define NO_MARK_READ (!RD_MK(0) && !RD_MK(1))
#endif
#define CLAIM_DONE (act == A_FINISH && FOLDS_FINISH_READ && NO_MARK_READ)
#ifdef BUG_CANCEL_DIRECT_MARKED
/* by hand: the direct cancel made whatever the read shows (the undos left to the
 * late-write check) */
#define CLAIM_CANCELS_DIRECT (act == A_ROLLBACK && FOLDS_ROLLBACK_READ)
#else
#define CLAIM_CANCELS_DIRECT (act == A_ROLLBACK && FOLDS_ROLLBACK_READ && !RD_MK(0) && !RD_MK(1))
#endif
#define CLAIM_ENDS (CLAIM_DONE || CLAIM_CANCELS_DIRECT)
/* The claim's compare-and-set on the version read: state and time as read (FRESH: any write
 * of the state and time since the read makes it stale). Seeded bugs: a folded claim of a
 * roll back (BUG_FOLD_ROLLBACK_UNREAD) or of a cancel (BUG_FOLD_CANCEL_UNREAD) sent without
 * it, on the lease's conditions alone. */
#if defined(BUG_FOLD_ROLLBACK_UNREAD) && defined(BUG_FOLD_CANCEL_UNREAD)
#define AS_READ_FOLD (FRESH(t, me) || (FOLDS(act) && (act == A_ROLLBACK || act == A_CANCEL)))
#elif defined(BUG_FOLD_ROLLBACK_UNREAD)
#define AS_READ_FOLD (FRESH(t, me) || (FOLDS(act) && act == A_ROLLBACK))
#elif defined(BUG_FOLD_CANCEL_UNREAD)
#define AS_READ_FOLD (FRESH(t, me) || (FOLDS(act) && act == A_CANCEL))
#else
#define AS_READ_FOLD FRESH(t, me)
#endif
/* Seeded bugs of the read folds: the direct cancel (BUG_CANCEL_DIRECT_UNREAD) or, by
 * hand, the terminal claim of a finish (BUG_DONE_DIRECT_UNREAD) without the state and time
 * as read. */
#if defined(BUG_CANCEL_DIRECT_UNREAD)
#define AS_READ (AS_READ_FOLD || CLAIM_CANCELS_DIRECT)
#elif defined(BUG_DONE_DIRECT_UNREAD)
#define AS_READ (AS_READ_FOLD || CLAIM_DONE)
#else
#define AS_READ AS_READ_FOLD
#endif
/* -DBUG_FOLD_LEASE_IGNORED: a folded claim without "lease absent or expired";
 * -DBUG_DONE_LEASE_IGNORED: the terminal claim of a finish without it; by hand,
 * -DBUG_CANCEL_LEASE_IGNORED: the direct cancel of a roll back without it. */
#ifdef BUG_FOLD_LEASE_IGNORED
#define LEASE_IGNORED FOLDS(act)
#elif defined(BUG_DONE_LEASE_IGNORED)
#define LEASE_IGNORED CLAIM_DONE
#elif defined(BUG_CANCEL_LEASE_IGNORED)
#define LEASE_IGNORED CLAIM_CANCELS_DIRECT /* by hand */
#else
#define LEASE_IGNORED 0
#endif
/* The claim in flight (-DCLAIM_IN_FLIGHT): the daemon sends its claim, and its deadline
 * counts from the sending, as the engine's (Deadline(start)); the claim reaches the
 * server in a later step, with the expiry computed when it was sent (cx: that expiry -
 * server now + 1, saturating at 0, counted down by the clock) and fenced by it
 * ($$NOW < expires - margin: here the daemon's own deadline, as every fence of the model).
 * A claim that arrives too late takes nothing. -DBUG_CLAIM_UNFENCED (or -DNO_FENCE): the
 * claim without its fence. A folded cancel takes no lease, so it has no fence. */
#ifdef CLAIM_IN_FLIGHT
#if defined(BUG_CLAIM_UNFENCED) || defined(NO_FENCE)
#define CLAIM_FENCE (1)
#else
#ifdef BUG_DIRECT_UNFENCED
/* by hand: the claims that end the action (a direct done or cancel) without the fence */
#define CLAIM_FENCE (drem[me] > 0 || (act == A_CANCEL && FOLDS_CANCEL) || CLAIM_ENDS)
#else
#define CLAIM_FENCE (drem[me] > 0 || (act == A_CANCEL && FOLDS_CANCEL))
#endif
#endif
#define CLAIM_EXP cx[me]
#define CLAIM_DEADLINE skip
#else
#define CLAIM_FENCE (1)
#define CLAIM_EXP (LEASE + 1)
#define CLAIM_DEADLINE drem[me] = LEASE - MARGIN
#endif

/* The state a claim writes (0: it only takes the lease), for E_CLAIM. */
#define CLAIM_WRITES \
  (CLAIM_DONE -> S_DONE : \
  (((FOLDS(act) && act == A_CANCEL) || CLAIM_CANCELS_DIRECT) -> S_CANCELLED : \
  (FOLDS(act) -> FOLD_TO(act) : 0)))
/* Transition {_id, state: <as known>, lease.owner: me} -> state `to`, time now; renews the
 * lease, or (terminal) removes it and records the outcome. No match: the action fails. */
inline transition(to) {
  LOCAL_CHECK();
  atomic {
    ENTER(E_TO, to)
    if
    :: st[t] == raw && OWNER_OK && FENCE ->
      DEADLINE_OK; DRIVER_OK;
      LOG_TXN(t, DMAJ);
      if
      :: to == S_CANCELLED && TAGGED_PROFILE -> st[t] = S_DONE; outc[t] = O_ROLLED_BACK
      :: to == S_CANCELLED && !TAGGED_PROFILE -> st[t] = S_CANCELLED
      :: to == S_DONE -> st[t] = S_DONE; outc[t] = O_COMMITTED
      :: else -> st[t] = to
      fi;
      age[t] = 0; touched(t);
      GHOST_STATE(t, to);
      if
      :: TERMINAL(to) -> own[t] = 0; lexp[t] = 0
      :: else -> RENEW
      fi;
      raw = st[t]; ok = 1; EV(E_TO, to, 0, 1)
    :: else -> ok = 0; EV(E_TO, to, 0, 0)
    fi;
    MAJ_ACK(DMAJ); printf("MSC: daemon %d: txn %d -> %d: %d\n", me, t, to, ok)
  }
  if :: !ok -> goto fail :: else -> skip fi
}

/* apply: {key, marker != t} -> $inc, $push marker. No match: read the participant; the
 * marker there means already applied, none means the step can never apply: roll back. */
inline w_apply(s) {
  LOCAL_CHECK();
  atomic {
    ENTER(E_APPLY, s)
    a = ACC(t, s);
    if
    :: FENCE && !MK(t, a) ->
      DEADLINE_OK; DRIVER_OK; LOG_ACC(a, DMAJ);
      bal[a] = bal[a] + DELTA(s); MK(t, a) = 1; NET(t, s)++; ok = 1;
#ifdef FIX_UNDO_OWN
      mine = mine | (1 << s);
#endif
      EV(E_APPLY, s, 0, 1)
    :: else -> ok = 0; EV(E_APPLY, s, 0, 0)
    fi;
    MAJ_ACK(DMAJ); printf("MSC: daemon %d: apply step %d of txn %d: %d\n", me, s, t, ok)
  }
  if
  :: !ok ->
    atomic { ENTER(E_CANNOT, s) cannot = !MK(t, a); printf("MSC: daemon %d: read: cannot apply %d\n", me, cannot); EV(E_CANNOT, s, cannot, 1) }
    if :: cannot -> cannot = 0; a = 0; goto l_rollback :: else -> skip fi
  :: else -> skip
  fi;
  a = 0
}
/* undo: {key, marker = t} -> inverse $inc, $pull marker */
inline w_undo(s) {
  LOCAL_CHECK();
  atomic {
    ENTER(E_UNDO, s)
    a = ACC(t, s);
    if
    :: FENCE && MK(t, a) ->
      DEADLINE_OK; DRIVER_OK; LOG_ACC(a, DMAJ); bal[a] = bal[a] - DELTA(s); MK(t, a) = 0;
      NET(t, s)--; EV(E_UNDO, s, 0, 1)
    :: else -> EV(E_UNDO, s, 0, 0)
    fi;
    MAJ_ACK(DMAJ); printf("MSC: daemon %d: undo step %d of txn %d\n", me, s, t);
    a = 0
  }
}
/* The finish reads its participants first, in one read, and sends only the request the
 * read calls for: the pull with its trace where the read saw the marker and no trace, the
 * undo of a duplicate where it saw both, nothing where the marker is gone. With the read
 * fold (the default) that read is made before the claim, after the transaction's: another
 * daemon's finish may then leave a trace between the read and the claim, and the pull the
 * read called for matches nothing, since "trace absent" is in its filter (without it,
 * seeded bug e). With -DBEFORE_READ_FOLDS the read is made after the claim, under the
 * lease, where no trace the read missed can appear but this daemon's own. Either way each
 * request carries its conditions, checked by the server as it writes, and a marker pushed
 * after the read (a stalled application's late apply after an earlier finish's pull) is
 * left to the late-write check, as one pushed after done. */
#define RD_MK(s) ((rd >> (2 * (s))) & 1)
#define RD_FIN(s) ((rd >> (2 * (s) + 1)) & 1)
#ifdef FIX_FINISH_TRACE
#define READ_PARTICIPANTS \
  rd = MK(t, ACC(t, 0)) + 2 * FIN(t, ACC(t, 0)) + 4 * MK(t, ACC(t, 1)) + 8 * FIN(t, ACC(t, 1))
#else
#define READ_PARTICIPANTS rd = MK(t, ACC(t, 0)) + 4 * MK(t, ACC(t, 1))
#endif
#if defined(BEFORE_FINISH_READ)
#define SEND_PULL(s) (1)
#define SEND_DUP(s) (1)
#else
#define SEND_PULL(s) (RD_MK(s) && !RD_FIN(s))
#define SEND_DUP(s) (RD_MK(s) && RD_FIN(s))
#endif
#ifdef BUG_FINISH_STALE_READ
#define PULL_GUARD(a) (1) /* the pull trusts the read: no "trace absent" in its filter */
#else
#define PULL_GUARD(a) (!FIN(t, a))
#endif
/* A resume without the fold (BEFORE_FOLD, or the daemon of FOLD_MIXED that does not fold)
 * is the engine's before the fold: it takes the transaction over only when its read shows a
 * step not yet applied (with nothing to apply, its pending -> applied races the
 * application's), and sends an apply only for such a step. Folded, the claim has taken it
 * over and every apply is sent, guarded by the marker (one the read saw matches nothing). */
#if defined(FIX_FINISH_TRACE) && !defined(BEFORE_FINISH_READ)
#define UNFOLDED_TAKEOVER (!(RD_MK(0) && RD_MK(1)))
#ifdef BUG_APPLY_UNREAD
#define SENDS_APPLY(s) (1) /* every apply sent, the read notwithstanding (by hand only) */
#else
#define SENDS_APPLY(s) (FOLDS_RESUME || !RD_MK(s))
#endif
#else
#define UNFOLDED_TAKEOVER (1)
#define SENDS_APPLY(s) (1)
#endif
/* What the read calls for, as E_FINISH says it: 1 the pull, 2 the undo of a duplicate */
#define FINISH_AS(s) (SEND_PULL(s) -> 1 : (SEND_DUP(s) -> 2 : 0))
/* finish: {key, marker = t} -> $pull marker */
inline w_finish(s) {
  LOCAL_CHECK();
  atomic {
    ENTER(E_FINISH, s)
    a = ACC(t, s);
    if
#ifdef FIX_FINISH_TRACE
    /* {key, marker = t, finished != t} -> $pull marker, $push finished t; a marker next to
     * a trace is a late duplicate: {key, marker = t, finished = t} -> undo it */
    :: FENCE && SEND_PULL(s) && MK(t, a) && PULL_GUARD(a) ->
      DEADLINE_OK; DRIVER_OK; LOG_ACC(a, DMAJ); MK(t, a) = 0; FIN(t, a) = 1;
      EV(E_FINISH, s, FINISH_AS(s), 1)
    :: FENCE && SEND_DUP(s) && MK(t, a) && FIN(t, a) ->
      DEADLINE_OK; DRIVER_OK; LOG_ACC(a, DMAJ); bal[a] = bal[a] - DELTA(s); MK(t, a) = 0;
      NET(t, s)--; EV(E_FINISH, s, FINISH_AS(s), 1)
#else
    :: FENCE && MK(t, a) -> DEADLINE_OK; DRIVER_OK; LOG_ACC(a, DMAJ); MK(t, a) = 0
#endif
    :: else -> EV(E_FINISH, s, FINISH_AS(s), 0)
    fi;
    MAJ_ACK(DMAJ); printf("MSC: daemon %d: finish (pull) step %d of txn %d\n", me, s, t);
    a = 0
  }
}
/* Once the transaction is done, the traces of its finish serve no more (no finish can
 * follow): {key, finished = t} -> $pull finished t, without a lease (the engine sends one
 * updateMany per collection for a whole batch; the late-write check and the orphan scan
 * remove what is left). -DBUG_UNTRACE_BEFORE_DONE removes them before done. */
inline untrace(s) {
#if defined(FIX_FINISH_TRACE) && !defined(NO_UNTRACE)
  atomic {
    ENTER(E_UNTRACE, s)
    a = ACC(t, s);
    if
    :: FIN(t, a) -> LOG_ACC(a, DMAJ); FIN(t, a) = 0; EV(E_UNTRACE, s, 0, 1)
    :: else -> EV(E_UNTRACE, s, 0, 0)
    fi;
    MAJ_ACK(DMAJ); printf("MSC: daemon %d: removes the trace of txn %d on account %d\n", me, t, a);
    a = 0
  }
#else
  skip
#endif
}
/* tagged sets: finish = updateMany({tx: t}) untag+validate; undo = deleteMany({tx: t}) */
inline finish_tagged(g) {
  LOCAL_CHECK();
  atomic {
    if
    :: FENCE && GRP(t, g) == 1 -> DEADLINE_OK; DRIVER_OK; LOG_GRP(t, g, DMAJ); GRP(t, g) = 2
    :: else -> skip
    fi;
    MAJ_ACK(DMAJ); printf("MSC: daemon %d: untag collection %d of txn %d\n", me, g, t)
  }
}
inline undo_tagged(g) {
  LOCAL_CHECK();
  atomic {
    if
    :: FENCE && GRP(t, g) == 1 -> DEADLINE_OK; DRIVER_OK; LOG_GRP(t, g, DMAJ); GRP(t, g) = 0
    :: else -> skip
    fi;
    MAJ_ACK(DMAJ); printf("MSC: daemon %d: delete tagged of collection %d of txn %d\n", me, g, t)
  }
}

inline read_txn() {
    rs = PST(t); ra = age[t]; raw = st[t];
    unk = (st[t] == S_DONE && outc[t] == O_NONE);
    act = DECIDE(rs, ra);
    FRESH(t, me) = 1;
    printf("MSC: daemon %d: reads txn %d state %d age %d: action %d\n", me, t, rs, ra, act);
    EV(E_READ, rs, act, 1)
}

#ifdef BUG_PARTICIPANTS_FIRST
#define PICK_READ READ_PARTICIPANTS; printf("MSC: daemon %d: reads the participants of txn %d: %d\n", me, t, rd)
#else
#define PICK_READ read_txn()
#endif
proctype daemon(byte me) {
  byte t, rs, ra, raw, act, a;
  byte rd; /* the finish's read of the participants: RD_MK, RD_FIN */
  bool ok, cannot, unk;
#ifdef FIX_UNDO_OWN
  byte mine; /* the steps this run applied itself */
#endif

top:
#ifdef FLEET
  /* The start of a sweep: upsert the member record with the server's time, then list the
   * live members (on the server's clock). The view is kept for the whole sweep. */
  atomic {
    hb[me] = HBX;
    vw[me] = VIEW;
    RESTS(0);
    printf("MSC: daemon %d: heartbeat; lists live members %d\n", me, vw[me])
  }
#endif
  /* The sweep's candidate query (narrowed to the share, and with -DOVERDUE widened to
   * every overdue transaction; both on the server's clock, now) and read: one transaction,
   * as it is now. A sweep is one batch of one transaction, so the view is listed afresh
   * before every batch. With -DOVERDUE_SIGHTED the share is widened by this daemon's
   * sightings as they were, and the sweep then records what it found (SWEEP_SEES), in the
   * same step. */
  if
  :: atomic { ELIGIBLE(0) && IN_SHARE(0, me) && TURN(E_READ, PST(0)) -> SWEEP_SEES(0); t = 0; PICK_READ }
  :: atomic {
       NTX > 1 && ELIGIBLE(NTX - 1) && IN_SHARE(NTX - 1, me) && TURN(E_READ, PST(NTX - 1)) ->
       SWEEP_SEES(NTX - 1);
       t = NTX - 1; PICK_READ
     }
#ifdef FLEET
  /* nothing of its share to do: the next interval's heartbeat */
  :: atomic {
       !(ELIGIBLE(0) && IN_SHARE(0, me)) &&
       !(NTX > 1 && ELIGIBLE(NTX - 1) && IN_SHARE(NTX - 1, me)) -> SWEEP_SEES_ALL; RESTS(1);
       vw[me] = 0
     };
     goto top
#endif
  fi;
#ifdef BUG_PARTICIPANTS_FIRST
  /* by hand: the participants read first (in the pick), the transaction only then */
  atomic { read_txn() }
  if :: act == A_NONE -> goto idle :: else -> skip fi;
#endif
  if
  :: act == A_LATE -> goto l_late
  :: else -> skip
  fi;
#if !defined(TAGGED) && !defined(BUG_PARTICIPANTS_FIRST) && \
    (defined(FOLD_FINISH_READ) || defined(FOLD_ROLLBACK_READ) || defined(BUG_FINISH_STALE_READ))
  /* The read folds (D, E): the participants read before the claim, after the transaction
   * (a step of its own: anything may happen between the two reads, and after). */
  if
  :: PRE_READ ->
    atomic {
      ENTER(E_PREREAD, 0)
      READ_PARTICIPANTS;
      printf("MSC: daemon %d: reads the participants of txn %d before its claim: %d\n", me, t, rd);
      EV(E_PREREAD, 0, rd, 1)
    }
  :: else -> skip
  fi;
#endif

  /* Claim: {_id, state and time as read, no quarantine, lease absent or expired on the
   * server's clock} -> lease = {me, expires: now + LEASE}; the deadline counts from here.
   * Not "or ours": a daemon never takes over its own lease (lib/src/engine/requests.cc, Claim);
   * every exit path releases it, and one left by a crash expires like any other. */
#ifdef BUG_SHARE_AS_PERMISSION
  /* the share taken as permission: it is ours, so no claim */
  atomic {
    BEGIN_DRIVE; ok = 1; printf("MSC: daemon %d: drives txn %d of its share, no claim\n", me, t)
  }
#else
#ifdef CLAIM_IN_FLIGHT
  atomic {
    drem[me] = LEASE - MARGIN; cx[me] = LEASE + 1;
    printf("MSC: daemon %d: sends its claim of txn %d\n", me, t)
  }
#endif
  /* A folded claim is also the action's first transition, in the same compare-and-set:
   * the state it writes, the time now and the lease; a folded cancel ends the transaction
   * there and leaves no lease. */
  atomic {
    ENTER(E_CLAIM, CLAIM_WRITES)
    if
    :: AS_READ && !quar[t] && (own[t] == 0 || lexp[t] == 0 || LEASE_IGNORED) && CLAIM_FENCE ->
      LOG_TXN(t, DMAJ);
      BEGIN_DRIVE; ok = 1;
      if
      :: CLAIM_DONE ->
        /* fold D: the read showed no marker; applied -> done, the outcome, no lease */
        printf("MSC: daemon %d: claims txn %d, writing %d, no lease: 1\n", me, t, S_DONE);
        EV(E_CLAIM, S_DONE, 0, 1);
        st[t] = S_DONE; outc[t] = O_COMMITTED; age[t] = 0; touched(t);
        GHOST_STATE(t, S_DONE); own[t] = 0; lexp[t] = 0
      :: (FOLDS(act) && act == A_CANCEL) || CLAIM_CANCELS_DIRECT ->
        /* a transfer's initial (tagged inserts have no initial state), or with fold E a
         * pending transfer whose read showed no marker */
        printf("MSC: daemon %d: claims txn %d, writing %d, no lease: 1\n", me, t, S_CANCELLED);
        EV(E_CLAIM, S_CANCELLED, 0, 1);
        st[t] = S_CANCELLED; age[t] = 0; touched(t);
        GHOST_STATE(t, S_CANCELLED); own[t] = 0; lexp[t] = 0
      :: FOLDS(act) && act != A_CANCEL && !CLAIM_ENDS ->
        CLAIM_DEADLINE;
#ifdef BUG_FOLD_RESUME_LEASE_ONLY
        /* seeded bug: the take-over written into the lease sub-document, with the time;
         * the state stays pending, and the daemon carries on as if it were resuming */
        if
        :: act == A_RESUME ->
          printf("MSC: daemon %d: claims txn %d, writing the take-over into the lease: 1\n", me, t)
        :: else ->
          printf("MSC: daemon %d: claims txn %d, writing %d: 1\n", me, t, FOLD_TO(act));
          DEADLINE_OK; st[t] = FOLD_TO(act); GHOST_STATE(t, FOLD_TO(act))
        fi;
#else
        printf("MSC: daemon %d: claims txn %d, writing %d: 1\n", me, t, FOLD_TO(act));
        EV(E_CLAIM, FOLD_TO(act), 0, 1);
        DEADLINE_OK; st[t] = FOLD_TO(act); GHOST_STATE(t, FOLD_TO(act));
#endif
        age[t] = 0; touched(t); raw = st[t];
        own[t] = me + 1; lexp[t] = CLAIM_EXP
      :: else ->
        printf("MSC: daemon %d: claims txn %d: 1\n", me, t); EV(E_CLAIM, 0, 0, 1);
        CLAIM_DEADLINE; own[t] = me + 1; lexp[t] = CLAIM_EXP
      fi
    :: else -> ok = 0; printf("MSC: daemon %d: claims txn %d: 0\n", me, t);
      EV(E_CLAIM, CLAIM_WRITES, 0, 0)
    fi;
#ifdef CLAIM_IN_FLIGHT
    cx[me] = 0;
#endif
    MAJ_ACK(DMAJ)
  }
#endif
  if :: !ok -> goto idle :: else -> skip fi;

  if
  :: CLAIM_DONE ->
    /* nothing else is written but the traces the read found */
    if :: RD_FIN(0) -> untrace(0) :: else -> skip fi;
    if :: RD_FIN(1) -> untrace(1) :: else -> skip fi;
    goto idle
  :: CLAIM_CANCELS_DIRECT -> goto idle
  :: act == A_CANCEL && FOLDS(act) -> goto idle
  :: act == A_CANCEL && !FOLDS(act) -> transition(S_CANCELLED); goto idle
  :: act == A_RESUME -> goto l_resume
  :: act == A_ROLLBACK && !CLAIM_CANCELS_DIRECT -> goto l_rollback
  :: act == A_FINISH && !CLAIM_DONE -> goto l_finish
  :: act == A_FINISH_ROLLBACK -> goto l_finish_rollback
  fi;

l_resume: /* transfer only: a started tagged insert is never resumed */
#ifdef TAGGED
  goto fail;
#else
#if defined(FIX_FINISH_TRACE) && !defined(BEFORE_FINISH_READ)
  /* The apply reads the participants (under the lease), and its finish goes by that read:
   * nothing but this daemon can leave a trace meanwhile, and every marker is there once
   * the applies are done. */
  atomic {
    ENTER(E_READP, 0)
    READ_PARTICIPANTS; printf("MSC: daemon %d: reads the participants of txn %d: %d\n", me, t, rd);
    EV(E_READP, 0, rd, 1)
  }
#endif
#ifdef FIX_RESUMING
  /* pending -> resuming before any apply: the application's own pending -> applied
   * then fails and it stops, so that it cannot pull a marker (finding 1) while one of
   * our applies is on its way. Folded, the claim wrote it. */
  if
  :: raw == S_PENDING && !FOLDS_RESUME && UNFOLDED_TAKEOVER -> transition(S_RESUMING)
  :: else -> skip /* resuming as read, taken over by the folded claim, or nothing to apply */
  fi;
#endif
#if (defined(FOLD_RESUME) && !defined(FOLD_MIXED)) || !defined(FIX_FINISH_TRACE) || \
    defined(BEFORE_FINISH_READ) || defined(BUG_APPLY_UNREAD)
  w_apply(0); /* every apply sent (SENDS_APPLY is 1) */
  w_apply(1);
#else
  if :: SENDS_APPLY(0) -> w_apply(0) :: else -> skip fi;
  if :: SENDS_APPLY(1) -> w_apply(1) :: else -> skip fi;
#endif
  rd = rd | 5; /* both markers there: applied now, or before */
#ifdef FIX_UNDO_OWN
  /* Rejected fix of finding 1: if the transaction is no longer ours and pending, take
   * back (marker-guarded, under the lease) what this run applied. */
  LOCAL_CHECK();
  atomic {
    if
    :: st[t] == raw && own[t] == me + 1 && FENCE -> ok = 1
    :: else -> ok = 0
    fi
  }
  if
  :: !ok ->
    if :: mine & 1 -> w_undo(0) :: else -> skip fi;
    if :: mine & 2 -> w_undo(1) :: else -> skip fi;
    goto fail
  :: else -> skip
  fi;
#endif
  transition(S_APPLIED);
  goto l_finish;
#endif

l_rollback:
#ifdef FOLD_ROLLBACK
  /* a folded claim has written canceling already */
  if
  :: raw != S_CANCELING -> transition(S_CANCELING)
  :: else -> skip
  fi;
#else
  transition(S_CANCELING);
#endif
#if defined(FOLD_ROLLBACK_READ) && !defined(TAGGED)
  /* fold E: the undos the read before the claim called for (E1, ROLLBACK_UNDO_PREREAD),
   * or with ROLLBACK_UNDO_REREAD those a read made now, under the lease, calls for (E2) */
  if
  :: act == A_ROLLBACK && FOLDS_ROLLBACK_READ ->
#ifndef ROLLBACK_UNDO_PREREAD
    atomic { READ_PARTICIPANTS; printf("MSC: daemon %d: reads the participants of txn %d: %d\n", me, t, rd) }
#endif
    if :: RD_MK(0) -> w_undo(0) :: else -> skip fi;
    if :: RD_MK(1) -> w_undo(1) :: else -> skip fi;
    transition(S_CANCELLED);
    goto idle
  :: else -> skip
  fi;
#endif
l_finish_rollback:
#ifdef TAGGED
  undo_tagged(0);
  undo_tagged(1);
#else
  w_undo(0);
  w_undo(1);
#endif
  transition(S_CANCELLED);
  goto idle;

l_finish:
#ifdef TAGGED
  finish_tagged(0);
  finish_tagged(1);
#else
#if defined(FIX_FINISH_TRACE) && !defined(BEFORE_FINISH_READ)
  if
  :: act == A_RESUME -> skip /* read by the apply */
  :: act == A_FINISH && PRE_READ -> skip /* read before the claim: fold D (or bug e) */
  :: else ->
    atomic { READ_PARTICIPANTS; printf("MSC: daemon %d: reads the participants of txn %d: %d\n", me, t, rd) }
  fi;
#endif
  w_finish(0);
  w_finish(1);
#endif
#ifdef BUG_UNTRACE_BEFORE_DONE
  untrace(0);
  untrace(1);
#endif
  transition(S_DONE);
#if !defined(TAGGED) && !defined(BUG_UNTRACE_BEFORE_DONE)
  untrace(0);
  untrace(1);
#endif
  goto idle;

l_late: /* late-write check / orphan scan: no lease; every write guarded by the marker */
#ifdef TAGGED
  a = 0;
  do
  :: a < NG ->
    atomic {
      if
      :: rs == S_CANCELLED && GRP(t, a) == 1 -> LOG_GRP(t, a, DMAJ); GRP(t, a) = 0
      :: rs == S_DONE && !unk && GRP(t, a) == 1 -> LOG_GRP(t, a, DMAJ); GRP(t, a) = 2
      :: rs == S_DONE && unk && GRP(t, a) == 1 ->
        /* nothing records the direction: quarantined for an operator */
        LOG_TXN(t, DMAJ); quar[t] = 1;
        printf("MSC: daemon %d: quarantines txn %d (tagged documents after done)\n", me, t);
        assert(!quar[t]) /* a well-formed transaction must not need an operator */
      :: else -> skip
      fi;
      MAJ_ACK(DMAJ); printf("MSC: daemon %d: late-write check of txn %d collection %d\n", me, t, a);
      a++
    }
  :: else -> break
  od;
#else
  a = 0;
  do
  :: a < 2 ->
    atomic {
      ENTER(E_LATE, a)
      /* on done: undo the duplicate; on cancelled: undo (for an $inc both are the
       * inverse $inc and $pull marker) */
      if
      :: MK(t, ACC(t, a)) -> LOG_ACC(ACC(t, a), DMAJ);
        bal[ACC(t, a)] = bal[ACC(t, a)] - DELTA(a); MK(t, ACC(t, a)) = 0; NET(t, a)--;
        EV(E_LATE, a, 0, 1)
      :: else -> EV(E_LATE, a, 0, 0)
      fi;
      MAJ_ACK(DMAJ); printf("MSC: daemon %d: late-write check of txn %d step %d\n", me, t, a);
      a++
    }
  :: else -> break
  od;
  /* and the traces a finish left, once the late writes are undone */
  untrace(0);
  untrace(1);
#endif
  goto idle;

fail: /* release the lease, best effort: {_id, lease.owner: me} -> unset lease */
  atomic {
    if
    :: own[t] == me + 1 && TURN(E_RELEASE, 0) ->
      LOG_TXN(t, DMAJ); own[t] = 0; lexp[t] = 0; EV(E_RELEASE, 0, 0, 1)
    :: own[t] != me + 1 && TURN(E_RELEASE, 0) -> EV(E_RELEASE, 0, 0, 0)
#ifdef TRACE_CHECK
    /* the engine leaves a lease past its local deadline to expire: it sends no release */
    :: drem[me] == 0 -> skip
#endif
    fi;
    MAJ_ACK(DMAJ); printf("MSC: daemon %d: action failed, releases txn %d\n", me, t)
  }
idle:
  atomic {
    FRESH(t, me) = 0; drem[me] = 0;
#ifdef FLEET
    vw[me] = 0; RESTS(1);
#endif
    t = 0; rs = 0; ra = 0; raw = 0; act = 0; a = 0; ok = 0; cannot = 0; unk = 0; rd = 0;
#ifdef FIX_UNDO_OWN
    mine = 0;
#endif
  }
  goto top
}

#ifdef HUNG
/* ---------------------------------------------------------------- a hung member */
/* A member that heartbeats but never sweeps to any effect: its sweeps fail in a way it does
 * not recognise, or every write it sends is refused, or it is stuck in a batch while
 * something keeps its record fresh. It never claims nor writes; its record stays live as
 * long as it heartbeats, which it may do at any moment or stop doing (then its record
 * expires). The record at the start is its heartbeat before its first sweep. With
 * -DHUNG_LEAVES every later heartbeat follows a sweep that failed, and the one that
 * follows the NFAIL-th failed sweep leaves the watch out of the record. */
proctype hung(byte me) {
  do
  :: atomic {
       hb[me] = HBX;
#ifdef HUNG_LEAVES
       /* this heartbeat follows a sweep that failed */
       if :: nfl < NFAIL -> nfl++ :: else -> skip fi;
       if :: nfl == NFAIL -> lw[me] = 0 :: else -> skip fi;
#endif
       printf("MSC: hung member %d: heartbeat\n", me)
     }
  od
}
#endif

/* ---------------------------------------------------------------- the checker */
/* At every state, the checker asks: if every actor stopped here for good (a crash: the
 * applications and daemons are stopped wherever they are), the clock ran past every
 * threshold and lease, and a fresh daemon swept once (decision table, then the late-write
 * check and orphan scan), would the end-state invariants hold? It works on a copy of the
 * database and puts everything back, so it adds transitions but no states. */
inline copy_state() {
  i = 0;
  do
  :: i < NTX -> c_st[i] = st[i]; c_outc[i] = outc[i]; c_quar[i] = quar[i];
     c_cmt[i] = cmt[i]; c_rbk[i] = rbk[i]; i++
  :: else -> break
  od;
  i = 0;
  do :: i < NACC -> c_bal[i] = bal[i]; i++ :: else -> break od;
  i = 0;
  do
  :: i < NTX * NACC -> c_mk[i] = mk[i];
#ifdef FIX_FINISH_TRACE
     c_fin[i] = fin[i];
#endif
     i++
  :: else -> break
  od;
  i = 0;
  do :: i < NTX * 2 -> c_net[i] = net[i]; i++ :: else -> break od;
  i = 0;
  do :: i < NTX * NG -> c_grp[i] = grp[i]; i++ :: else -> break od
}
inline clear_copy() {
  i = 0;
  do
  :: i < NTX -> c_st[i] = 0; c_outc[i] = 0; c_quar[i] = 0; c_cmt[i] = 0; c_rbk[i] = 0; i++
  :: else -> break
  od;
  i = 0;
  do :: i < NACC -> c_bal[i] = 0; i++ :: else -> break od;
  i = 0;
  do :: i < NTX * NACC -> c_mk[i] = 0; c_fin[i] = 0; i++ :: else -> break od;
  i = 0;
  do :: i < NTX * 2 -> c_net[i] = 0; i++ :: else -> break od;
  i = 0;
  do :: i < NTX * NG -> c_grp[i] = 0; i++ :: else -> break od
}
/* From here on, the checker's names stand for its copy. */
#define st c_st
#define outc c_outc
#define quar c_quar
#define cmt c_cmt
#define rbk c_rbk
#define bal c_bal
#define mk c_mk
#define net c_net
#define grp c_grp
#define fin c_fin
inline final_finish(t, s) {
  a = ACC(t, s);
#ifdef FIX_FINISH_TRACE
  if
  :: MK(t, a) && FIN(t, a) -> bal[a] = bal[a] - DELTA(s); NET(t, s)--
  :: else -> FIN(t, a) = 1
  fi;
#endif
  MK(t, a) = 0
}

proctype checker() {
  byte i, t, s, a, act;
  short want0, want1;
  byte c_st[NTX], c_outc[NTX], c_net[NTX * 2], c_grp[NTX * NG];
  bool c_quar[NTX], c_cmt[NTX], c_rbk[NTX], c_mk[NTX * NACC], c_fin[NTX * NACC];
  short c_bal[NACC];
  do
  :: d_step {
    copy_state();
#ifndef TAGGED
    /* Money at quiescent points: whenever no account carries a marker, the total is what
     * it was and each step has been applied once (its transaction reached applied) or
     * not at all. */
    if
    :: NO_MARKERS -> assert(TOTAL_OK); assert(NETS_OK)
    :: else -> skip
    fi;
#endif
    t = 0;
    do
    :: t < NTX ->
      if
      :: st[t] == S_NONE || quar[t] -> act = A_NONE
      :: else -> act = DECIDE(PST(t), AMAX)
      fi;
      if
      :: act == A_CANCEL -> st[t] = S_CANCELLED; GHOST_STATE(t, S_CANCELLED)
      :: act == A_ROLLBACK || act == A_FINISH_ROLLBACK ->
        st[t] = S_CANCELING; GHOST_STATE(t, S_CANCELING);
        s = 0;
        do
        :: s < 2 && !TAGGED_PROFILE ->
          a = ACC(t, s);
          if :: MK(t, a) -> bal[a] = bal[a] - DELTA(s); MK(t, a) = 0; NET(t, s)-- :: else -> skip fi;
          s++
        :: s < NG && TAGGED_PROFILE -> if :: GRP(t, s) == 1 -> GRP(t, s) = 0 :: else -> skip fi; s++
        :: else -> break
        od;
        if
        :: TAGGED_PROFILE -> st[t] = S_DONE; outc[t] = O_ROLLED_BACK
        :: else -> st[t] = S_CANCELLED
        fi;
        GHOST_STATE(t, S_CANCELLED)
      :: act == A_RESUME -> /* only a resuming transaction (FIX_RESUMING) is resumed here */
        s = 0;
        do
        :: s < 2 ->
          a = ACC(t, s);
          if :: !MK(t, a) -> bal[a] = bal[a] + DELTA(s); MK(t, a) = 1; NET(t, s)++ :: else -> skip fi;
          s++
        :: else -> break
        od;
        st[t] = S_APPLIED; GHOST_STATE(t, S_APPLIED);
        final_finish(t, 0); final_finish(t, 1);
        st[t] = S_DONE; outc[t] = O_COMMITTED; GHOST_STATE(t, S_DONE)
      :: act == A_FINISH ->
        s = 0;
        do
        :: s < 2 && !TAGGED_PROFILE -> final_finish(t, s); s++
        :: s < NG && TAGGED_PROFILE -> if :: GRP(t, s) == 1 -> GRP(t, s) = 2 :: else -> skip fi; s++
        :: else -> break
        od;
        st[t] = S_DONE; outc[t] = O_COMMITTED; GHOST_STATE(t, S_DONE)
      :: else -> skip
      fi;
      /* late-write check / orphan scan */
      if
      :: st[t] != S_NONE && !quar[t] && TERMINAL(PST(t)) && LATE_AGE(AMAX) ->
        s = 0;
        do
        :: s < 2 && !TAGGED_PROFILE ->
          a = ACC(t, s);
          if :: MK(t, a) -> bal[a] = bal[a] - DELTA(s); MK(t, a) = 0; NET(t, s)-- :: else -> skip fi;
          s++
        :: s < NG && TAGGED_PROFILE ->
          if
          :: GRP(t, s) == 1 && PST(t) == S_CANCELLED -> GRP(t, s) = 0
          :: GRP(t, s) == 1 && PST(t) == S_DONE && outc[t] == O_COMMITTED -> GRP(t, s) = 2
          :: GRP(t, s) == 1 && PST(t) == S_DONE && outc[t] == O_NONE -> quar[t] = 1
          :: else -> skip
          fi;
          s++
        :: else -> break
        od
      :: else -> skip
      fi;
      t++
    :: else -> break
    od;

    /* The end-state invariants. */
    t = 0;
    do
    :: t < NTX ->
      assert(!quar[t]);                                   /* nothing set aside */
      assert(st[t] == S_NONE || TERMINAL(PST(t)));        /* every transaction terminal */
      assert(!(cmt[t] && rbk[t]));                        /* one way only */
      if
      :: !TAGGED_PROFILE ->
        assert(!MK(t, 0) && !MK(t, 1));                   /* no marker left */
        /* each step applied exactly once if done, never if not */
        assert(NET(t, 0) == (PST(t) == S_DONE) && NET(t, 1) == (PST(t) == S_DONE))
      :: else ->
        assert(GRP(t, 0) != 1 && GRP(t, NG - 1) != 1);   /* no tag left */
        /* all of its documents if committed, none if rolled back */
        assert(st[t] == S_NONE || PST(t) != S_DONE || (GRP(t, 0) == 2 && GRP(t, NG - 1) == 2));
        assert(PST(t) != S_CANCELLED || (GRP(t, 0) == 0 && GRP(t, NG - 1) == 0))
      fi;
      t++
    :: else -> break
    od;
    if
    :: !TAGGED_PROFILE ->
      /* money: each account = its opening balance + the done transfers */
      want0 = INIT_BAL; want1 = INIT_BAL;
      t = 0;
      do
      :: t < NTX ->
        if
        :: PST(t) == S_DONE ->
          if :: ACC(t, 0) == 0 -> want0--; want1++ :: else -> want1--; want0++ fi
        :: else -> skip
        fi;
        t++
      :: else -> break
      od;
      assert(bal[0] + bal[1] == NACC * INIT_BAL);
      assert(bal[0] == want0 && bal[1] == want1)
    :: else -> skip
    fi;
    clear_copy();
    i = 0; t = 0; s = 0; a = 0; act = 0; want0 = 0; want1 = 0
  }
  od
}
#undef st
#undef outc
#undef quar
#undef cmt
#undef rbk
#undef bal
#undef mk
#undef net
#undef grp
#undef fin


#ifdef QUAR_RECORD
/* ---------------------------------------------------------------- the quarantine records */
/* docs/proof.md, "The quarantine records"; model/README.md, "The quarantine records". A
 * quarantine is two writes to two collections, which no server makes atomic: the mark on
 * the transaction (quar[t], recovery.quarantine: what the claim's filter reads, so that no
 * daemon drives the transaction) and the record in the daemon's own collection (rec[t]:
 * what inspect, the metric and the alert count). Counted from the records, a mark without
 * a record is a quarantined transaction nobody is told of; a record without a mark is
 * counted once too often, until the repair removes it. The record comes first, and the
 * mark is fenced by a deadline the record carries (markBy, raised, never lowered): the
 * repair removes a record only once its deadline has passed on the server's clock and the
 * transaction was read unmarked after that, and only as it read it (the same markBy). A late mark is then refused by its own fence.
 *
 * The record touches no write to the application's documents (the claim reads the mark,
 * which is as it was): this part runs alone, on its own database of NTX transactions, with
 * ND daemons that quarantine, repair, stall and crash anywhere, an operator's releases and
 * the server's clock. Checked: in every state, a marked transaction has its record
 * (property count); once every actor has stopped and the clock has run past every deadline,
 * one repair leaves exactly the marked transactions recorded (property repaired).
 * -DBUG_QUAR_MARK_FIRST (seeded): the mark written before the record.
 * -DBUG_QUAR_DELETE_UNREAD (seeded): the repair's delete without "markBy as read". */
#define QH 2            /* the deadline: server now + QH ticks when a quarantine starts */
bool rec[NTX];          /* the record {_id: {transactions, txn}} exists */
byte rdl[NTX];          /* its markBy - server now + 1, saturating at 0: 0 = passed */
byte rsv[NTX];          /* bit r: repairer r read the markBy the record still holds. A markBy
                         * only grows (a new one is later than any that passed), so a
                         * delete "as read" matches only while no insert or raise came */
byte qdl[ND];           /* daemon d's quarantine in flight: its deadline - now + 1, or 0 */
byte qstop;             /* actors stopped for good */

/* The repair of txn t's record, the sweep's and release's one implementation: find it
 * with its deadline passed (the filter, on the server's clock), read the transaction after
 * that, and delete it as read when the transaction carried no mark. */
inline quar_repair(t, who) {
  if
  :: atomic {
      rec[t] && rdl[t] == 0 -> rsv[t] = rsv[t] | (1 << who);
      printf("MSC: repairer %d: finds txn %d's record, its deadline passed\n", who, t)
    };
    if
    :: quar[t] -> skip                                  /* a quarantine: the record stays */
    :: else ->
      atomic {
#ifdef BUG_QUAR_DELETE_UNREAD
        if :: rec[t] && rdl[t] == 0 -> rec[t] = 0 :: else -> skip fi;
#else
        if :: rec[t] && rdl[t] == 0 && (rsv[t] & (1 << who)) -> rec[t] = 0 :: else -> skip fi;
#endif
        printf("MSC: repairer %d: reads txn %d unmarked; record deleted: %d\n", who, t, !rec[t])
      }
    fi
  :: else -> skip                                       /* none, or its deadline ahead */
  fi
}

inline quar_mark(t) {
  atomic {
    if :: qdl[me] > 0 -> quar[t] = 1 :: else -> skip fi; /* fenced: server now < deadline */
    printf("MSC: daemon %d: marks txn %d (fence live: %d)\n", me, t, qdl[me] > 0)
  }
}

proctype qdaemon(byte me) {
  byte t;
top:
  qdl[me] = 0; t = 0;
  do
  :: /* quarantine a transaction (it does not fit its profile, or failed too often) */
    if :: t = 0 :: NTX > 1 -> t = NTX - 1 fi;
    qdl[me] = QH + 1;
#ifdef BUG_QUAR_MARK_FIRST
    quar_mark(t);
#endif
    /* the record, insert-if-absent: {_id, markBy: deadline, reason, by, at, format} */
    atomic {
      if :: !rec[t] -> rec[t] = 1; rdl[t] = qdl[me]; rsv[t] = 0 :: else -> skip fi;
      printf("MSC: daemon %d: inserts txn %d's record if absent (deadline in %d)\n", me, t, qdl[me])
    };
    if :: goto top :: skip fi;                          /* a crash */
    /* raised to the deadline where it held an earlier one (never lowered) */
    atomic {
      if :: rec[t] && rdl[t] < qdl[me] -> rdl[t] = qdl[me]; rsv[t] = 0
      :: else -> skip fi;
      printf("MSC: daemon %d: raises txn %d's record's deadline\n", me, t)
    };
    if :: goto top :: skip fi;
    /* read back: the record there with a deadline no earlier than ours, or no mark */
    if :: rec[t] && rdl[t] >= qdl[me] -> skip :: else -> goto top fi;
    if :: goto top :: skip fi;
#ifndef BUG_QUAR_MARK_FIRST
    quar_mark(t);
#endif
    qdl[me] = 0
  :: /* a sweep's repair of one record */
    if :: t = 0 :: NTX > 1 -> t = NTX - 1 fi;
    quar_repair(t, me)
  :: atomic { qstop++; break }
  od
}

/* The operator's release: the mark removed, then the record by the repair's rule. */
proctype qoperator() {
  byte t;
  do
  :: if :: t = 0 :: NTX > 1 -> t = NTX - 1 fi;
    atomic { quar[t] -> quar[t] = 0; printf("MSC: operator: releases txn %d\n", t) };
    if :: skip :: goto stop fi;                         /* a release that stopped there */
    quar_repair(t, ND)
  :: break
  od;
stop:
  qstop++
}

proctype qclock() {
  byte i;
  do
  :: atomic {
       i = 0;
       do
       :: i < NTX -> if :: rdl[i] > 0 -> rdl[i]-- :: else -> skip fi; i++
       :: else -> break
       od;
       i = 0;
       do
       :: i < ND -> if :: qdl[i] > 0 -> qdl[i]-- :: else -> skip fi; i++
       :: else -> break
       od
     }
  :: qstop == ND + 1 -> break
  od
}

/* count: in every state, a marked transaction has its record. */
proctype qcount() {
  atomic { assert(!quar[0] || rec[0]); assert(!quar[NTX - 1] || rec[NTX - 1]) }
}

/* repaired: everyone stopped, every deadline passed, one repair of each record. */
proctype qrepaired() {
  byte t;
  qstop == ND + 1;
  atomic {
    do
    :: t < NTX -> rdl[t] = 0; t++
    :: else -> break
    od
  };
  t = 0;
  do
  :: t < NTX ->
    if :: rec[t] -> quar_repair(t, ND + 1) :: else -> skip fi;
    assert(!quar[t] || rec[t]);
    assert(!rec[t] || quar[t]);
    t++
  :: else -> break
  od
}
#endif

init {
  atomic {
#ifdef QUAR_RECORD
    run qdaemon(0);
    if :: ND > 1 -> run qdaemon(ND - 1) :: else -> skip fi;
    run qoperator(); run qclock(); run qcount(); run qrepaired()
#else
#ifdef TRACE_CHECK
    c_code { conf_load(); };
#endif
#if defined(FLEET) && !defined(COLD_START)
    /* the fleet is running: both members have just heartbeated */
    hb[0] = HBX; hb[ND - 1] = HBX;
#endif
    /* -DCOLD_START: the fleet starts together, no record yet; a member lists only those
     * that have heartbeated before its list, itself included */

#ifdef TAGGED
    run app_tagged(0);
    if :: NTX > 1 -> run app_tagged(NTX - 1) :: else -> skip fi;
#else
    run app_transfer(0);
    if :: NTX > 1 -> run app_transfer(NTX - 1) :: else -> skip fi;
#endif
#ifdef HUNG
    run hung(0);
#else
    run daemon(0);
#endif
    if :: ND > 1 -> run daemon(ND - 1) :: else -> skip fi;
    run clock();
#ifdef WLOSS
    run failover();
#endif
#ifndef TRACE_CHECK
    run checker()
#else
    run trace_done()
#endif
#endif
  }
}
