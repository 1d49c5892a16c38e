package txnrecovery.testdb;

import de.bwaldvogel.mongo.backend.BsonType;
import de.bwaldvogel.mongo.backend.Missing;
import de.bwaldvogel.mongo.bson.BsonRegularExpression;
import de.bwaldvogel.mongo.bson.BsonTimestamp;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.bson.ObjectId;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Reads a query filter the way mongo-java-server's DefaultQueryMatcher evaluates it and finds the
 * clauses that may narrow the candidate documents.
 *
 * <p>The matcher evaluates a filter's top-level clauses in document order and stops at the first
 * one that does not match; a top-level {@code $and} evaluates its elements in order, each in turn
 * in document order. Some clauses can throw for some documents only (an unknown operator, a bad
 * regular expression, {@code $expr} on a value the comparator cannot order, ...). A clause is a
 * <em>narrowing clause</em> only if it and every clause evaluated before it are <em>safe</em>
 * (cannot throw, whatever the document): then the stock scan evaluates a later clause on exactly
 * the documents that match the narrowing clause, which are all among the candidates, so the
 * narrowed scan raises the same error on the same document, or none.
 */
final class FilterShape {
  /** {@code field} equals one of {@code values} (top-level field, scalar values). */
  record Clause(String field, List<Object> values, boolean in) {}

  private static final Set<String> COMPARISONS = Set.of("$gt", "$gte", "$lt", "$lte");

  private FilterShape() {}

  /** {@code {field: v}}, {@code {field: {$eq: v}}} or {@code {field: {$in: [v, ...]}}}. */
  static Clause narrowingClause(String key, Object value) {
    if (key.isEmpty() || key.startsWith("$") || key.contains(".")) return null;
    if (isNarrowingScalar(value)) return new Clause(key, List.of(value), false);
    if (!(value instanceof Document) || ((Document) value).size() != 1) return null;
    Document condition = (Document) value;
    if (condition.containsKey("$eq") && isNarrowingScalar(condition.get("$eq"))) {
      return new Clause(key, List.of(condition.get("$eq")), false);
    }
    if (condition.containsKey("$in") && condition.get("$in") instanceof Collection) {
      List<Object> values = new ArrayList<>((Collection<?>) condition.get("$in"));
      for (Object v : values) {
        if (!isNarrowingScalar(v)) return null;
      }
      return new Clause(key, values, true);
    }
    return null;
  }

  /**
   * A value the matcher compares by plain equality of normalized values (never null or missing,
   * never a document, array or regular expression).
   */
  static boolean isNarrowingScalar(Object value) {
    return value != null
        && !(value instanceof Map)
        && !(value instanceof Collection)
        && !(value instanceof BsonRegularExpression)
        && !(value instanceof Pattern)
        && !(value instanceof Missing);
  }

  // ---- safety: clauses the matcher evaluates without throwing, whatever the document ----

  static boolean safeClause(String key, Object value) {
    switch (key) {
      case "$comment":
        return !(value instanceof Document);
      case "$and":
      case "$or":
      case "$nor":
        if (!isNonEmptyListOfDocuments(value)) return false;
        for (Object element : (List<?>) value) {
          for (Map.Entry<String, Object> e : ((Document) element).entrySet()) {
            if (!safeClause(e.getKey(), e.getValue())) return false;
          }
        }
        return true;
      default:
        return safePath(key) && safeCondition(value);
    }
  }

  /** Non-empty dot-separated segments, none of them empty or starting with '$'. */
  static boolean safePath(String path) {
    if (path.isEmpty()) return false;
    for (String segment : path.split("\\.", -1)) {
      if (segment.isEmpty() || segment.startsWith("$")) return false;
    }
    return true;
  }

  private static boolean safeCondition(Object value) {
    if (value instanceof BsonRegularExpression) return safeRegex(value);
    if (!(value instanceof Document)) return !(value instanceof Pattern); // equality
    Document condition = (Document) value;
    if (condition.containsKey("$regex")) {
      for (String k : condition.keySet()) {
        if (!k.equals("$regex") && !k.equals("$options")) return false;
      }
      return safeRegex(condition);
    }
    if (condition.isEmpty()) return true;
    // Only operator documents; a literal sub-document (exact match) goes to the stock path.
    for (Map.Entry<String, Object> e : condition.entrySet()) {
      if (!safeOperator(e.getKey(), e.getValue())) return false;
    }
    return true;
  }

  private static boolean safeOperator(String operator, Object argument) {
    switch (operator) {
      case "$eq":
      case "$ne":
      case "$exists":
        return true;
      case "$in":
      case "$nin":
        if (!(argument instanceof Collection)) return false;
        for (Object element : (Collection<?>) argument) {
          if (element instanceof BsonRegularExpression && !safeRegex(element)) return false;
          if (element instanceof Pattern) return false;
        }
        return true;
      case "$all":
        if (!(argument instanceof Collection)) return false;
        for (Object element : (Collection<?>) argument) {
          if (element instanceof Document || element instanceof Pattern) return false;
          if (element instanceof BsonRegularExpression && !safeRegex(element)) return false;
        }
        return true;
      case "$size":
        return argument instanceof Number;
      case "$type":
        return safeType(argument, true);
      case "$not":
        if (argument instanceof BsonRegularExpression) return safeRegex(argument);
        if (!(argument instanceof Document) || ((Document) argument).isEmpty()) return false;
        Document inner = (Document) argument;
        if (inner.containsKey("$regex")) return safeCondition(inner);
        for (Map.Entry<String, Object> e : inner.entrySet()) {
          if (!safeOperator(e.getKey(), e.getValue())) return false;
        }
        return true;
      default:
        if (COMPARISONS.contains(operator)) return comparableScalar(argument);
        return false; // $elemMatch, $mod, $expr inside a field, geo, unknown: not analysed
    }
  }

  /** Types whose comparison with a value of the same class never throws. */
  private static boolean comparableScalar(Object argument) {
    return argument instanceof String
        || argument instanceof Number
        || argument instanceof Boolean
        || argument instanceof Instant
        || argument instanceof ObjectId
        || argument instanceof BsonTimestamp;
  }

  private static boolean safeType(Object argument, boolean allowList) {
    try {
      if ("number".equals(argument)) return true;
      if (argument instanceof String) {
        BsonType.forString((String) argument);
        return true;
      }
      if (argument instanceof Number) {
        BsonType.forNumber((Number) argument);
        return true;
      }
      if (allowList && argument instanceof Collection && !((Collection<?>) argument).isEmpty()) {
        for (Object element : (Collection<?>) argument) {
          if (!safeType(element, false)) return false;
        }
        return true;
      }
      return false;
    } catch (RuntimeException e) {
      return false;
    }
  }

  private static boolean safeRegex(Object regex) {
    try {
      BsonRegularExpression.convertToRegularExpression(regex).matcher("");
      return true;
    } catch (RuntimeException e) {
      return false;
    }
  }

  static boolean isNonEmptyListOfDocuments(Object value) {
    if (!(value instanceof List) || ((List<?>) value).isEmpty()) return false;
    for (Object element : (List<?>) value) {
      if (!(element instanceof Document)) return false;
    }
    return true;
  }
}
