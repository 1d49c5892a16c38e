package txnrecovery.testdb;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.EmptyIndex;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.backend.Missing;
import de.bwaldvogel.mongo.backend.ValueComparator;
import de.bwaldvogel.mongo.bson.Document;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.Set;
import java.util.TreeSet;

/**
 * A non-unique secondary index, used only to narrow the documents a query looks at.
 *
 * <p>To everything in mongo-java-server it is the stock {@link EmptyIndex}: it never handles a
 * query, reports no positions and no keys, and describes itself the same way (the stock server
 * lists every secondary index as sparse). Only {@link NarrowedCollection} and {@link
 * CandidatePlanner} read it. All access happens under the collection's lock. It keeps, for the
 * documents of the collection:
 *
 * <ul>
 *   <li><b>By value</b> (first key a top-level field): each normalized scalar value of the field
 *       (the value itself, each element of an array, each element of an array nested in it: the
 *       matcher's {@code $in} looks one level into nested arrays) to the positions holding it.
 *       Equality in the matcher is equality of normalized values (Utils.nullAwareEquals), the
 *       normalization used here, so every document that matches {@code field == v} or {@code
 *       field $in [...]} for a scalar v is listed under v.
 *   <li><b>Unlisted</b>: the positions listed under no value, or holding a part that is not a
 *       scalar (missing, null, a document, an empty array, an array of documents): with the
 *       positions listed under values outside a {@code $nin} list, a superset of its matches.
 *   <li><b>Present</b>: the positions where the first key (a top-level field or a dotted path)
 *       exists, and those where it exists and is not an empty array; a path that crosses an
 *       array counts as present (the matcher looks into the array's documents).
 *   <li><b>Ordered</b> (an index of two keys or more, first key top-level): for each value of
 *       the first key, the positions ordered by the values of the other keys (as the
 *       matcher's comparator orders them, a missing value first), as a B-tree on the compound
 *       key would: {@code {state: "done", time: {$gte: A, $lt: B}}} is one range.
 *       Positions whose other keys hold an array or cross one are kept aside and are
 *       candidates of every range.
 * </ul>
 */
final class NarrowingIndex extends EmptyIndex<Integer> {
  /** Below every value of a key: the value of a document that lacks the key. */
  static final Object MISSING = new Object() {
        @Override
        public String toString() {
          return "MISSING";
        }
      };
  /** Bounds of a range that does not bound a key. */
  static final Object LOWEST = new Object();
  static final Object HIGHEST = new Object();

  private final String field;
  private final boolean topLevel;
  private final List<String> restPaths = new ArrayList<>();
  private final Map<Object, TreeSet<Integer>> positionsByValue = new HashMap<>();
  private final Map<Integer, List<Object>> valuesByPosition = new HashMap<>();
  private final TreeSet<Integer> unlisted = new TreeSet<>();
  private final TreeSet<Integer> present = new TreeSet<>();
  private final TreeSet<Integer> presentNotEmpty = new TreeSet<>();
  private final Map<Object, TreeSet<Entry>> ordered = new HashMap<>();
  private final Map<Integer, Object[]> restByPosition = new HashMap<>();
  private final TreeSet<Integer> irregularRest = new TreeSet<>();

  /** One document in the order of the keys after the first: their values, then its position. */
  record Entry(Object[] rest, int position) {}

  private static final Comparator<Object> KEY_ORDER =
      (a, b) -> {
        if (a == b) return 0;
        if (a == LOWEST || b == HIGHEST) return -1;
        if (a == HIGHEST || b == LOWEST) return 1;
        if (a == MISSING) return -1;
        if (b == MISSING) return 1;
        return ValueComparator.ascWithoutListHandling().compare(a, b);
      };
  private static final Comparator<Entry> ENTRY_ORDER =
      (a, b) -> {
        for (int i = 0; i < a.rest.length; i++) {
          int c = KEY_ORDER.compare(a.rest[i], b.rest[i]);
          if (c != 0) return c;
        }
        return Integer.compare(a.position, b.position);
      };

  NarrowingIndex(String name, List<IndexKey> keys) {
    super(name, keys);
    this.field = keys.get(0).getKey();
    this.topLevel = !field.contains(".");
    if (topLevel) {
      for (IndexKey key : keys.subList(1, keys.size())) restPaths.add(key.getKey());
    }
  }

  /** True if this index can narrow on its first key (a plain path, top-level or dotted). */
  static boolean canIndex(List<IndexKey> keys) {
    if (keys.isEmpty()) return false;
    for (IndexKey key : keys) {
      if (!FilterShape.safePath(key.getKey())) return false;
    }
    return true;
  }

  String field() {
    return field;
  }

  /** The paths of the keys after the first (none unless the first is a top-level field). */
  List<String> restPaths() {
    return restPaths;
  }

  /** Called by the stock code when the index is built over existing documents. */
  @Override
  public void add(Document document, Integer position, MongoCollection<Integer> collection) {
    put(document, position);
  }

  @Override
  public void drop() {
    positionsByValue.clear();
    valuesByPosition.clear();
    unlisted.clear();
    present.clear();
    presentNotEmpty.clear();
    ordered.clear();
    restByPosition.clear();
    irregularRest.clear();
  }

  /** Records (or re-records) the document stored at {@code position}. */
  void put(Document document, Integer position) {
    remove(position);
    Object value = valueAt(document, field);
    if (value != MISSING) {
      present.add(position);
      if (!(value instanceof Collection && ((Collection<?>) value).isEmpty())) {
        presentNotEmpty.add(position);
      }
    }
    if (!topLevel) return;
    List<Object> values = new ArrayList<>();
    boolean irregular = value == MISSING || value == null;
    if (value instanceof Collection) {
      for (Object element : (Collection<?>) value) {
        irregular |= !addValue(values, element);
        if (element instanceof Collection) {
          for (Object nested : (Collection<?>) element) irregular |= !addValue(values, nested);
        }
      }
    } else if (value != MISSING) {
      irregular |= !addValue(values, value);
    }
    if (irregular || values.isEmpty()) unlisted.add(position);
    valuesByPosition.put(position, values);
    for (Object v : values) positionsByValue.computeIfAbsent(v, k -> new TreeSet<>()).add(position);
    if (restPaths.isEmpty()) return;
    Object[] rest = new Object[restPaths.size()];
    boolean restIrregular = false;
    for (int i = 0; i < rest.length; i++) {
      rest[i] = valueAt(document, restPaths.get(i));
      restIrregular |= rest[i] instanceof Collection || rest[i] == CROSSES_ARRAY;
    }
    if (restIrregular) {
      irregularRest.add(position);
      return;
    }
    restByPosition.put(position, rest);
    for (Object v : values) {
      ordered.computeIfAbsent(v, k -> new TreeSet<>(ENTRY_ORDER)).add(new Entry(rest, position));
    }
  }

  /** Forgets the document stored at {@code position}. */
  void remove(Integer position) {
    present.remove(position);
    presentNotEmpty.remove(position);
    unlisted.remove(position);
    irregularRest.remove(position);
    List<Object> values = valuesByPosition.remove(position);
    Object[] rest = restByPosition.remove(position);
    if (values == null) return;
    for (Object v : values) {
      TreeSet<Integer> positions = positionsByValue.get(v);
      if (positions != null) {
        positions.remove(position);
        if (positions.isEmpty()) positionsByValue.remove(v);
      }
      TreeSet<Entry> entries = rest == null ? null : ordered.get(v);
      if (entries != null) {
        entries.remove(new Entry(rest, position));
        if (entries.isEmpty()) ordered.remove(v);
      }
    }
  }

  // ---- estimates: upper bounds of what the look-ups below list, in constant time per value

  long estimate(List<Object> values) {
    long n = 0;
    for (Object v : values) {
      TreeSet<Integer> positions = positionsByValue.get(normalize(v));
      if (positions != null) n += positions.size();
    }
    return n;
  }

  long estimateNotIn(List<Object> values) {
    Set<Object> excluded = new HashSet<>();
    for (Object v : values) excluded.add(normalize(v));
    long n = unlisted.size();
    for (Map.Entry<Object, TreeSet<Integer>> e : positionsByValue.entrySet()) {
      if (!excluded.contains(e.getKey())) n += e.getValue().size();
    }
    return n;
  }

  long estimateWhere(java.util.function.Predicate<Object> listed) {
    long n = unlisted.size();
    for (Map.Entry<Object, TreeSet<Integer>> e : positionsByValue.entrySet()) {
      if (listed.test(e.getKey())) n += e.getValue().size();
    }
    return n;
  }

  long estimatePresent(boolean notEmpty) {
    return notEmpty ? presentNotEmpty.size() : present.size();
  }

  // ---- look-ups: each adds the positions it finds to `out`, and stops once `out` holds more
  // ---- than `cap` (the caller then knows the look-up is no better than one it has)

  /** Every position holding one of these values. */
  void addPositions(List<Object> values, Set<Integer> out, int cap) {
    for (Object v : values) {
      TreeSet<Integer> positions = positionsByValue.get(normalize(v));
      if (positions == null) continue;
      if (out.size() + positions.size() > cap) {
        addCapped(positions, out, cap);
        return;
      }
      out.addAll(positions);
    }
  }

  /** A superset of the positions matching {@code $nin: values}. */
  void addNotIn(List<Object> values, Set<Integer> out, int cap) {
    Set<Object> excluded = new HashSet<>();
    for (Object v : values) excluded.add(normalize(v));
    if (!addCapped(unlisted, out, cap)) return;
    for (Map.Entry<Object, TreeSet<Integer>> e : positionsByValue.entrySet()) {
      if (excluded.contains(e.getKey())) continue;
      if (!addCapped(e.getValue(), out, cap)) return;
    }
  }

  /**
   * The positions listed under a value that passes {@code listed}, and every position the
   * index could not list (missing, null, documents, arrays of them): a superset of the
   * matches of a condition that matches only values passing it, or null, missing or
   * non-scalar ones (a range, {@code $type}, equality to null).
   */
  void addWhere(java.util.function.Predicate<Object> listed, Set<Integer> out, int cap) {
    if (!addCapped(unlisted, out, cap)) return;
    for (Map.Entry<Object, TreeSet<Integer>> e : positionsByValue.entrySet()) {
      if (listed.test(e.getKey()) && !addCapped(e.getValue(), out, cap)) return;
    }
  }

  /** A superset of the positions where the first key exists (and is not {@code []}). */
  void addPresent(boolean notEmpty, Set<Integer> out, int cap) {
    addCapped(notEmpty ? presentNotEmpty : present, out, cap);
  }

  /**
   * The positions holding one of {@code values} in the first key whose other keys lie between
   * {@code from} and {@code to} (both inclusive; LOWEST and HIGHEST for no bound), in the order
   * of the keys; and every position whose other keys could not be ordered.
   */
  void addRange(List<Object> values, Object[] from, Object[] to, Set<Integer> out, int cap) {
    if (!addCapped(irregularRest, out, cap)) return;
    for (Object v : values) {
      TreeSet<Entry> entries = ordered.get(normalize(v));
      if (entries == null) continue;
      NavigableSet<Entry> range =
          entries.subSet(
              new Entry(from, Integer.MIN_VALUE), true, new Entry(to, Integer.MAX_VALUE), true);
      for (Entry e : range) {
        out.add(e.position);
        if (out.size() > cap) return;
      }
    }
  }

  private static boolean addCapped(Set<Integer> positions, Set<Integer> out, int cap) {
    if (out.size() + positions.size() <= cap) {
      out.addAll(positions);
      return true;
    }
    for (Integer p : positions) {
      out.add(p);
      if (out.size() > cap) return false;
    }
    return true;
  }

  /** Adds the normalized value if it is a scalar the look-ups compare; false if it is not. */
  private static boolean addValue(List<Object> values, Object value) {
    if (value instanceof Collection) return true; // looked into by the caller, one level
    if (!FilterShape.isNarrowingScalar(value)) return false;
    Object key = normalize(value);
    if (!values.contains(key)) values.add(key);
    return true;
  }

  /** A path that runs through an array: the matcher looks into it; no single value. */
  private static final Object CROSSES_ARRAY = new Object();

  /**
   * The value at a dotted path: MISSING when absent, CROSSES_ARRAY when a segment before the
   * last holds an array (the matcher then looks into its elements).
   */
  private static Object valueAt(Document document, String path) {
    Object current = document;
    for (String segment : path.split("\\.", -1)) {
      if (current instanceof Collection) return CROSSES_ARRAY;
      if (!(current instanceof Document)) return MISSING;
      Object next = ((Document) current).getOrMissing(segment);
      if (next instanceof Missing) return MISSING;
      current = next;
    }
    return current;
  }

  /** The stock normalization (Utils.normalizeValue), reached through the public KeyValue API. */
  static Object normalize(Object value) {
    return new KeyValue(value).normalized().get(0);
  }
}
