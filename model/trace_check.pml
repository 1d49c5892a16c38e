/*
 * trace_check.pml: the engine's trace checked against recovery.pml by SPIN (scripts/
 * conformance.sh, docs/proof.md "Conformance"). This file adds no rule of the protocol: it
 * loads a trace, lets each daemon of the model take a logged step only when it is the next
 * line of the trace (EV), and ends the search as soon as every line has been taken. The
 * application, the clock and every step the engine does not log stay free: SPIN searches
 * for an interleaving of them that lets the logged steps happen as logged.
 *
 * The trace is read at the start from the file named by the environment variable
 * TRACE_EVENTS, one event a line: daemon kind step value matched optional; value and
 * matched -1 for "not known" (a bulk whose matched count does not say which of its writes
 * matched); optional 1 for a write the engine did not send because its read showed it had
 * nothing to do: the model's same write matching nothing, or no step of the model at all.
 *
 * The answer: "assertion violated (ti!=ntr)" means the whole trace was taken, a behaviour
 * of the model; otherwise no interleaving takes it, and the furthest line any took is the
 * last "conformance: took" line pan prints, with the model's state there.
 */
#define TRACE_CHECK
#define MAXEV 96
#define ANY 255
hidden byte tr_d[MAXEV];
hidden byte tr_k[MAXEV];
hidden byte tr_s[MAXEV];
hidden byte tr_x[MAXEV];
hidden byte tr_o[MAXEV];
hidden byte tr_opt[MAXEV];
hidden byte ntr;
byte ti; /* the next line of the trace to take */

c_decl {
  int conf_best = -1;
  void conf_load(void);
}
c_code {
  void conf_load(void) {
    const char* path = getenv("TRACE_EVENTS");
    FILE* f = path ? fopen(path, "r") : NULL;
    int d, k, s, x, o, opt, n = 0;
    if (!f) { printf("conformance: cannot read TRACE_EVENTS\n"); exit(2); }
    while (n < MAXEV && fscanf(f, "%d %d %d %d %d %d", &d, &k, &s, &x, &o, &opt) == 6) {
      tr_d[n] = d; tr_k[n] = k; tr_s[n] = s; tr_opt[n] = opt;
      tr_x[n] = x < 0 ? ANY : x; tr_o[n] = o < 0 ? ANY : o;
      n++;
    }
    if (n == MAXEV && !feof(f)) { printf("conformance: more than %d events\n", MAXEV); exit(2); }
    fclose(f);
    ntr = n;
  }
}

/* Prints the furthest line any interleaving has taken so far, with the model's state there
 * (transaction 0's state, age, lease owner and expiry, markers and traces of its two
 * steps, balances, each daemon's time left before its deadline). */
#define TOOK \
  c_code { \
    if ((int) now.ti > conf_best) { \
      conf_best = now.ti; \
      printf("conformance: took %d st=%d age=%d own=%d lexp=%d mk=%d%d fin=%d%d bal=%d,%d drem=%d,%d\n", \
        conf_best, now.st[0], now.age[0], now.own[0], now.lexp[0], now.mk[0], now.mk[1], \
        now.fin[0], now.fin[1], now.bal[0], now.bal[1], now.drem[0], now.drem[1]); \
    } \
  }

/* The next line of the trace is daemon me's step of kind k on step s: the condition that
 * enables the atomic step the event belongs to (its guard and its effects stay one step). */
#define TURN(k, s) (ti < ntr && tr_d[ti] == me && tr_k[ti] == (k) && tr_s[ti] == (s))
#define ENTER(k, s) TURN(k, s) ->

/* The model's step (kind k, step s, value x, matched o) of daemon `me` is the next line of
 * the trace, or it cannot be taken. */
#define EV(k, s, x, o) \
  (ti < ntr && tr_d[ti] == me && tr_k[ti] == (k) && tr_s[ti] == (s) && \
   (tr_x[ti] == ANY || tr_x[ti] == (x)) && (tr_o[ti] == ANY || tr_o[ti] == (o))) -> \
  ti++; TOOK

/* Skips an optional line (a write the engine did not send), and ends the search once every
 * line has been taken. */
proctype trace_done() {
  do
  :: atomic { ti < ntr && tr_opt[ti] -> ti++; TOOK }
  :: ntr > 0 && ti == ntr -> assert(ti != ntr)
  od
}

#include "recovery.pml"
