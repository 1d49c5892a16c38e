package txnrecovery.testdb;

import de.bwaldvogel.mongo.backend.EmptyIndex;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.MongoCollection;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.TreeSet;

/**
 * A non-unique secondary index on the first key of an index (a top-level field), used only to
 * narrow the documents a query looks at.
 *
 * <p>To everything in mongo-java-server it is the stock {@link EmptyIndex}: it never handles a
 * query, reports no positions and no keys, and describes itself the same way (the stock server
 * lists every secondary index as sparse). Only {@link NarrowedCollection} reads it.
 *
 * <p>It maps each normalized scalar value of the field to the positions of the documents that hold
 * it: the value itself, each element of an array, and each element of an array nested in that
 * array (the matcher's {@code $in} looks one level into nested arrays). Equality in the matcher is
 * equality of normalized values (Utils.nullAwareEquals), the normalization used here, so every
 * document that matches {@code field == v} or {@code field $in [...]} for a scalar v is listed
 * under v. Maintained by the collection: on insert, update (after the document changed) and delete.
 * All access happens under the collection's lock.
 */
final class NarrowingIndex extends EmptyIndex<Integer> {
  private final String field;
  private final Map<Object, TreeSet<Integer>> positionsByValue = new HashMap<>();
  private final Map<Integer, List<Object>> valuesByPosition = new HashMap<>();

  NarrowingIndex(String name, List<IndexKey> keys) {
    super(name, keys);
    this.field = keys.get(0).getKey();
  }

  /** True if this index can narrow on {@code field} (its first key is a top-level field). */
  static boolean canIndex(List<IndexKey> keys) {
    if (keys.isEmpty()) return false;
    String first = keys.get(0).getKey();
    return !first.isEmpty() && !first.startsWith("$") && !first.contains(".");
  }

  String field() {
    return field;
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
  }

  /** Records (or re-records) the document stored at {@code position}. */
  void put(Document document, Integer position) {
    remove(position);
    List<Object> values = new ArrayList<>();
    Object value = document.get(field);
    if (value instanceof Collection) {
      for (Object element : (Collection<?>) value) {
        addValue(values, element);
        if (element instanceof Collection) {
          for (Object nested : (Collection<?>) element) addValue(values, nested);
        }
      }
    } else {
      addValue(values, value);
    }
    if (values.isEmpty()) return;
    valuesByPosition.put(position, values);
    for (Object v : values) positionsByValue.computeIfAbsent(v, k -> new TreeSet<>()).add(position);
  }

  /** Forgets the document stored at {@code position}. */
  void remove(Integer position) {
    List<Object> values = valuesByPosition.remove(position);
    if (values == null) return;
    for (Object v : values) {
      TreeSet<Integer> positions = positionsByValue.get(v);
      if (positions != null) {
        positions.remove(position);
        if (positions.isEmpty()) positionsByValue.remove(v);
      }
    }
  }

  /** Number of positions listed under these values (an upper bound of the candidates). */
  int estimate(List<Object> values) {
    int n = 0;
    for (Object v : values) {
      NavigableSet<Integer> positions = positionsByValue.get(normalize(v));
      if (positions != null) n += positions.size();
    }
    return n;
  }

  /** The positions of every document holding one of these values, in ascending order. */
  NavigableSet<Integer> positions(List<Object> values) {
    if (values.size() == 1) {
      TreeSet<Integer> positions = positionsByValue.get(normalize(values.get(0)));
      return positions == null ? new TreeSet<>() : positions;
    }
    TreeSet<Integer> union = new TreeSet<>();
    for (Object v : values) {
      TreeSet<Integer> positions = positionsByValue.get(normalize(v));
      if (positions != null) union.addAll(positions);
    }
    return union;
  }

  private static void addValue(List<Object> values, Object value) {
    if (!FilterShape.isNarrowingScalar(value)) return; // queries only narrow on scalars
    Object key = normalize(value);
    if (!values.contains(key)) values.add(key);
  }

  /** The stock normalization (Utils.normalizeValue), reached through the public KeyValue API. */
  static Object normalize(Object value) {
    return new KeyValue(value).normalized().get(0);
  }
}
