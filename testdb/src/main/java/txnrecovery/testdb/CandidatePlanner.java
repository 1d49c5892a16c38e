package txnrecovery.testdb;

import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.Utils;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.bson.ObjectId;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Finds, for a query filter, a superset of the documents it matches from the collection's
 * indexes, as small as it can: the candidates {@link NarrowedCollection} hands to the stock
 * matcher. A planner in the small, shaped like mongod's for the filters the daemon sends.
 *
 * <p>A filter is a conjunction of clauses, read in the matcher's order up to the first clause
 * that is not safe ({@link FilterShape}): each safe clause before it may narrow, and the
 * smallest of what they offer is used. A clause narrows by
 *
 * <ul>
 *   <li>equality, {@code $eq} or {@code $in} of scalars: the positions listed under the values
 *       (a single-field unique index; else a {@link NarrowingIndex} whose first key it is);
 *   <li>{@code $nin} of scalars: the positions listed under other values, and those the index
 *       could not list;
 *   <li>{@code $exists: true} (with {@code $ne: []}): the positions where the path exists (and
 *       is not an empty array), from an index whose first key is that path;
 *   <li>{@code $or}: the union of what each branch narrows to, if every branch narrows;
 * </ul>
 *
 * and a conjunction narrows by a range of a compound index: equality on its first key, then
 * equality, {@code $exists: false} or a date or ObjectId range on the next keys, as a B-tree
 * on those keys would read ({@link NarrowingIndex#addRange}).
 *
 * <p>Every look-up is capped by the best set found so far, so that a clause that would list
 * the whole history (a finished state) costs no more than the clause that wins.
 */
final class CandidatePlanner {
  private final List<Index<Integer>> indexes;
  private final String idField;
  /** Positions looked at by the look-ups of the last {@link #candidates} call. */
  private long keysExamined;

  CandidatePlanner(List<Index<Integer>> indexes, String idField) {
    this.indexes = indexes;
    this.idField = idField;
  }

  long keysExamined() {
    return keysExamined;
  }

  /** The candidates of {@code filter} in storage order, or null when no index narrows it. */
  TreeSet<Integer> candidates(Document filter, int collectionSize) {
    keysExamined = 0;
    return best(filter, Math.max(collectionSize - 1, 0));
  }

  /** The first cap of a range, and the largest estimate of a look-up tried before ranges. */
  private static final int FIRST_STEP = 16;

  /** A look-up: adds what it finds to {@code out}, stopping once {@code out} exceeds cap. */
  private interface LookUp {
    void addTo(Set<Integer> out, int cap);
  }

  /** The smallest candidate set of a conjunction with at most {@code cap} positions, or null. */
  private TreeSet<Integer> best(Document conjunction, int cap) {
    Map<String, Object> conditions = new LinkedHashMap<>();
    List<LookUp> estimated = new ArrayList<>();
    List<Long> estimates = new ArrayList<>();
    List<LookUp> ranged = new ArrayList<>();
    List<List<Document>> disjunctions = new ArrayList<>();
    collect(conjunction, conditions, disjunctions);
    for (Map.Entry<String, Object> c : conditions.entrySet()) {
      singleClause(c.getKey(), c.getValue(), estimated, estimates);
    }
    ranged.addAll(compoundRanges(conditions));

    TreeSet<Integer> best = null;
    int bound = cap;
    // Smallest estimate first; each capped by what is in hand, so that a look-up that would
    // list the history stops as soon as it cannot win. The few-document ones (an equality
    // on a unique key: every update by _id) before the ranges, which they then cap at what
    // they found: after them, a range of the filter's other conditions was walked on every
    // update. The others after the ranges, which cap them in turn.
    Integer[] order = new Integer[estimated.size()];
    for (int i = 0; i < order.length; i++) order[i] = i;
    Arrays.sort(order, (a, b) -> Long.compare(estimates.get(a), estimates.get(b)));
    int exact = 0;
    for (; exact < order.length && estimates.get(order[exact]) <= FIRST_STEP; exact++) {
      TreeSet<Integer> found = run(estimated.get(order[exact]), bound);
      if (found != null) {
        best = found;
        bound = found.size() - 1;
      }
    }
    for (LookUp lookUp : best == null ? List.<LookUp>of() : ranged) {
      TreeSet<Integer> found = run(lookUp, bound);
      if (found != null) {
        best = found;
        bound = found.size() - 1;
      }
    }
    // Ranges cannot be sized without walking them: try them all under a cap that grows
    // fourfold, so that a range over the history costs no more than the small one beside it.
    for (int step = FIRST_STEP; best == null && !ranged.isEmpty(); step *= 4) {
      int limit = Math.min(step, bound);
      for (LookUp lookUp : ranged) {
        TreeSet<Integer> found = run(lookUp, best == null ? limit : best.size() - 1);
        if (found != null) best = found;
      }
      if (limit == bound) break;
    }
    if (best != null) bound = best.size() - 1;
    for (List<Document> branches : disjunctions) {
      if (bound < 0) break;
      TreeSet<Integer> union = new TreeSet<>();
      boolean narrowed = true;
      for (Document branch : branches) {
        TreeSet<Integer> found = best(branch, bound - union.size());
        if (found == null) {
          narrowed = false;
          break;
        }
        union.addAll(found);
        if (union.size() > bound) {
          narrowed = false;
          break;
        }
      }
      if (narrowed) {
        best = union;
        bound = union.size() - 1;
      }
    }
    for (int i = exact; i < order.length; i++) {
      TreeSet<Integer> found = run(estimated.get(order[i]), bound);
      if (found != null) {
        best = found;
        bound = found.size() - 1;
      }
    }
    return best;
  }

  private TreeSet<Integer> run(LookUp lookUp, int cap) {
    if (cap < 0) return null;
    TreeSet<Integer> out = new TreeSet<>();
    lookUp.addTo(out, cap);
    keysExamined += out.size();
    return out.size() > cap ? null : out;
  }

  /**
   * Reads a conjunction's clauses in the matcher's order up to the first that is not safe:
   * the conditions on each path (those a path is given twice, as {@code $and} does for a time
   * range, merged into one: a conjunction, so any of its operators bounds it) and the
   * disjunctions.
   */
  private boolean collect(
      Document filter, Map<String, Object> conditions, List<List<Document>> disjunctions) {
    for (Map.Entry<String, Object> entry : filter.entrySet()) {
      String key = entry.getKey();
      Object value = entry.getValue();
      if (key.equals("$and") && FilterShape.isNonEmptyListOfDocuments(value)) {
        for (Object element : (List<?>) value) {
          if (!collect((Document) element, conditions, disjunctions)) return false;
        }
        continue;
      }
      if (!FilterShape.safeClause(key, value)) return false;
      if (key.equals("$or")) {
        List<Document> branches = new ArrayList<>();
        for (Object element : (List<?>) value) branches.add((Document) element);
        disjunctions.add(branches);
        continue;
      }
      if (key.startsWith("$")) continue;
      Object had = conditions.get(key);
      if (had == null && !conditions.containsKey(key)) {
        conditions.put(key, value);
      } else if (isOperators(had) && isOperators(value)) {
        Document merged = new Document((Document) had);
        for (Map.Entry<String, Object> op : ((Document) value).entrySet()) {
          merged.putIfAbsent(op.getKey(), op.getValue());
        }
        conditions.put(key, merged);
      }
    }
    return true;
  }

  private static boolean isOperators(Object condition) {
    if (!(condition instanceof Document) || ((Document) condition).isEmpty()) return false;
    for (String k : ((Document) condition).keySet()) {
      if (!k.startsWith("$")) return false;
    }
    return true;
  }

  private void singleClause(String path, Object value, List<LookUp> out, List<Long> estimates) {
    FilterShape.Clause clause = FilterShape.narrowingClause(path, value);
    if (clause != null) {
      for (Index<Integer> index : indexes) {
        List<IndexKey> keys = index.getKeys();
        if (!keys.get(0).getKey().equals(path)) continue;
        if (index.isUnique() && keys.size() == 1) {
          // A unique index expands arrays one level, enough for equality. $in also looks into
          // nested arrays, which only the _id index (never an array) can rule out.
          if (clause.in() && !path.equals(idField)) continue;
          out.add((found, cap) -> {
            for (Object v : clause.values()) {
              for (Integer position : index.getPositions(new Document(path, v))) {
                found.add(position);
              }
            }
          });
          estimates.add((long) clause.values().size());
          return;
        }
      }
      NarrowingIndex index = narrowing(path, true);
      if (index != null) {
        out.add((found, cap) -> index.addPositions(clause.values(), found, cap));
        estimates.add(index.estimate(clause.values()));
      }
      return;
    }
    NarrowingIndex byValue = narrowing(path, true);
    if (value == null && byValue != null) {
      // {f: null}: missing or null, both unlisted (a null inside an array too).
      out.add((found, cap) -> byValue.addWhere(k -> false, found, cap));
      estimates.add(byValue.estimateWhere(k -> false));
      return;
    }
    if (!(value instanceof Document)) return;
    Document condition = (Document) value;
    if (byValue != null && condition.containsKey("$exists") && !Utils.isTrue(condition.get("$exists"))) {
      // Missing: unlisted.
      out.add((found, cap) -> byValue.addWhere(k -> false, found, cap));
      estimates.add(byValue.estimateWhere(k -> false));
    }
    List<Object> notIn = scalarList(condition.get("$nin"));
    java.util.function.Predicate<Object> listed = valueTest(condition);
    if (listed != null && byValue != null) {
      out.add((found, cap) -> byValue.addWhere(listed, found, cap));
      estimates.add(byValue.estimateWhere(listed));
    }
    if (notIn != null && byValue != null) {
      out.add((found, cap) -> byValue.addNotIn(notIn, found, cap));
      estimates.add(byValue.estimateNotIn(notIn));
    }
    if (condition.containsKey("$exists") && Utils.isTrue(condition.get("$exists"))) {
      NarrowingIndex index = narrowing(path, false);
      Object ne = condition.get("$ne");
      boolean notEmpty = ne instanceof Collection && ((Collection<?>) ne).isEmpty();
      if (index != null) {
        out.add((found, cap) -> index.addPresent(notEmpty, found, cap));
        estimates.add(index.estimatePresent(notEmpty));
      }
    }
  }

  /**
   * For a condition that matches only listed values passing the test (besides null, missing
   * and non-scalar values, which the index keeps unlisted): a range of strings or of other
   * same-type values, or {@code $type} of a single non-string type. Null otherwise.
   */
  private static java.util.function.Predicate<Object> valueTest(Document condition) {
    Object type = condition.get("$type");
    if (type instanceof String t && !Set.of("string", "symbol", "array").contains(t)) {
      return k -> !(k instanceof String);
    }
    Object low = condition.containsKey("$gte") ? condition.get("$gte") : condition.get("$gt");
    Object high = condition.containsKey("$lte") ? condition.get("$lte") : condition.get("$lt");
    boolean lowOpen = !condition.containsKey("$gte");
    boolean highOpen = !condition.containsKey("$lte");
    if (low == null && high == null) return null;
    // The families the matcher compares within (type bracketing); others are not narrowed.
    Class<?> family = null;
    for (Class<?> c : List.of(String.class, Number.class, Instant.class)) {
      if ((low == null || c.isInstance(low)) && (high == null || c.isInstance(high))) family = c;
    }
    if (family == null) return null;
    Class<?> kind = family;
    Object lo = low == null ? null : NarrowingIndex.normalize(low);
    Object hi = high == null ? null : NarrowingIndex.normalize(high);
    de.bwaldvogel.mongo.backend.ValueComparator order =
        de.bwaldvogel.mongo.backend.ValueComparator.ascWithoutListHandling();
    // Other types never compare (type bracketing).
    return k -> {
      if (!kind.isInstance(k)) return false;
      if (lo != null) {
        int c = order.compare(k, lo);
        if (c < 0 || (c == 0 && lowOpen)) return false;
      }
      if (hi != null) {
        int c = order.compare(k, hi);
        if (c > 0 || (c == 0 && highOpen)) return false;
      }
      return true;
    };
  }

  /** An index whose first key is {@code path} (top-level only where values are needed). */
  private NarrowingIndex narrowing(String path, boolean needsValues) {
    for (Index<Integer> index : indexes) {
      if (index instanceof NarrowingIndex n && n.field().equals(path)) {
        if (!needsValues || !path.contains(".")) return n;
      }
    }
    return null;
  }

  /** The ranges of compound indexes this conjunction's conditions bound. */
  private List<LookUp> compoundRanges(Map<String, Object> conditions) {
    List<LookUp> out = new ArrayList<>();
    for (Index<Integer> index : indexes) {
      if (!(index instanceof NarrowingIndex n) || n.restPaths().isEmpty()) continue;
      FilterShape.Clause first = FilterShape.narrowingClause(n.field(), conditions.get(n.field()));
      if (first == null) continue;
      List<String> rest = n.restPaths();
      Object[] from = new Object[rest.size()];
      Object[] to = new Object[rest.size()];
      Arrays.fill(from, NarrowingIndex.LOWEST);
      Arrays.fill(to, NarrowingIndex.HIGHEST);
      int bounded = 0;
      for (int i = 0; i < rest.size(); i++) {
        Object[] range = bounds(conditions.get(rest.get(i)));
        if (range == null) break;
        from[i] = range[0];
        to[i] = range[1];
        bounded++;
        if (range[0] != range[1]) break; // a range: the keys after it are not ordered within
      }
      if (bounded == 0) continue;
      out.add((found, cap) -> n.addRange(first.values(), from, to, found, cap));
    }
    return out;
  }

  /**
   * The inclusive bounds, in the index's order, of the values a key condition can match: the
   * same object twice for a single point; null when it does not bound the key.
   */
  static Object[] bounds(Object condition) {
    if (condition == null) return null;
    if (!(condition instanceof Document)) {
      return FilterShape.isNarrowingScalar(condition) ? new Object[] {condition, condition} : null;
    }
    Document c = (Document) condition;
    if (c.containsKey("$exists") && !Utils.isTrue(c.get("$exists"))) {
      return new Object[] {NarrowingIndex.MISSING, NarrowingIndex.MISSING};
    }
    if (c.containsKey("$eq") && FilterShape.isNarrowingScalar(c.get("$eq"))) {
      return new Object[] {c.get("$eq"), c.get("$eq")};
    }
    if ("date".equals(c.get("$type")) && c.size() == 1) {
      return new Object[] {Instant.MIN, Instant.MAX};
    }
    Object low = null;
    Object high = null;
    for (String op : List.of("$gt", "$gte")) {
      if (c.containsKey(op)) low = c.get(op);
    }
    for (String op : List.of("$lt", "$lte")) {
      if (c.containsKey(op)) high = c.get(op);
    }
    Object sample = low != null ? low : high;
    if (sample instanceof Instant) {
      if (low == null) low = Instant.MIN;
      if (high == null) high = Instant.MAX;
      return low instanceof Instant && high instanceof Instant ? new Object[] {low, high} : null;
    }
    if (sample instanceof ObjectId) {
      byte[] max = new byte[12];
      Arrays.fill(max, (byte) 0xff);
      if (low == null) low = new ObjectId(new byte[12]);
      if (high == null) high = new ObjectId(max);
      return low instanceof ObjectId && high instanceof ObjectId ? new Object[] {low, high} : null;
    }
    return null;
  }

  private static List<Object> scalarList(Object value) {
    if (!(value instanceof Collection)) return null;
    List<Object> out = new ArrayList<>();
    for (Object v : (Collection<?>) value) {
      if (!FilterShape.isNarrowingScalar(v)) return null;
      out.add(v);
    }
    return out;
  }
}
