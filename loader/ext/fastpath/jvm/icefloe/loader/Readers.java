/*
 * Readers: one per Iceberg type, each reading one JSON value from a streaming parser into the
 * Java value Spark converts to its column type, or throwing Decline.
 *
 * Each reader accepts exactly the JSON the strict Python parser (loader/parse.py) accepts for
 * its type, with the same value, or less: boolean <- true/false; int/long <- JSON integers in
 * range; float/double <- any JSON number, rounded once to double (and then to float), as
 * Python does; decimal(p, s) <- a JSON number or a string holding one, exact at scale s;
 * string <- JSON strings without lone surrogates; date, timestamp, timestamptz <- the strict
 * grammars; uuid <- 8-4-4-4-12 hex, lower-cased; binary, fixed(n) <- canonical padded base64;
 * list <- array; map <- object; struct <- object with the parser's field matching (an exact
 * key wins; otherwise, when case-insensitive, one key equal to the field name after ASCII
 * lower-casing; several such keys are ambiguous).
 */
package icefloe.loader;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.math.BigDecimal;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.apache.spark.sql.RowFactory;

final class Readers {
  private Readers() {}

  /** The record is not provably plain: the strict parser decides. Thrown without a trace. */
  static final class Decline extends RuntimeException {
    private static final long serialVersionUID = 1L;
    static final Decline INSTANCE = new Decline();

    private Decline() {
      super("declined", null, false, false);
    }
  }

  /** The nesting the decoder follows at most, whatever the configured limit. */
  static final int DEPTH_CAP = 256;

  /** A compiled spec: the root struct reader and the limits. */
  static final class Compiled {
    final Reader root;
    final int maxBytes;

    Compiled(Reader root, int maxBytes) {
      this.root = root;
      this.maxBytes = maxBytes;
    }
  }

  /** Reads one non-null JSON value whose first token is {@code token}. */
  interface Reader {
    Object read(JsonParser p, JsonToken token, int depth) throws IOException;
  }

  static Compiled compile(String spec) {
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(spec);
    } catch (IOException e) {
      throw new IllegalArgumentException("unreadable decoder spec: " + e.getMessage(), e);
    }
    int maxDepth = Math.min(root.get("max_depth").asInt(), DEPTH_CAP);
    boolean ci = root.get("case_insensitive").asBoolean();
    Reader struct = new Builder(maxDepth, ci).struct(root.get("fields"));
    return new Compiled(struct, root.get("max_bytes").asInt());
  }

  private static final class Builder {
    final int maxDepth;
    final boolean ci;

    Builder(int maxDepth, boolean ci) {
      this.maxDepth = maxDepth;
      this.ci = ci;
    }

    Reader type(JsonNode t) {
      String kind = t.get("type").asText();
      switch (kind) {
        case "struct":
          return struct(t.get("fields"));
        case "list":
          return new ListReader(type(t.get("element")), t.get("required").asBoolean(), maxDepth);
        case "map":
          return new MapReader(type(t.get("value")), t.get("required").asBoolean(), maxDepth);
        case "decimal":
          return new DecimalReader(t.get("precision").asInt(), t.get("scale").asInt());
        case "fixed":
          return new Base64Reader(t.get("length").asInt());
        case "binary":
          return new Base64Reader(-1);
        case "boolean":
          return Readers::bool;
        case "int":
          return Readers::integer;
        case "long":
          return Readers::bigint;
        case "float":
          return (p, token, depth) -> (float) checkedFloat(p, token);
        case "double":
          return Readers::real;
        case "string":
          return Readers::string;
        case "date":
          return Readers::date;
        case "timestamp":
          return Readers::timestamp;
        case "timestamptz":
          return Readers::timestamptz;
        case "uuid":
          return Readers::uuid;
        default:
          throw new IllegalArgumentException("no JVM reader for type " + kind);
      }
    }

    Reader struct(JsonNode fields) {
      int n = fields.size();
      String[] names = new String[n];
      String[] folded = new String[n];
      boolean[] required = new boolean[n];
      Reader[] readers = new Reader[n];
      for (int i = 0; i < n; i++) {
        JsonNode f = fields.get(i);
        names[i] = f.get("name").asText();
        folded[i] = f.get("folded").asText();
        required[i] = f.get("required").asBoolean();
        readers[i] = type(f.get("type"));
      }
      return new StructReader(names, folded, required, readers, ci, maxDepth);
    }
  }

  // -- containers ----------------------------------------------------------------------------

  static final class StructReader implements Reader {
    private final Reader[] readers;
    private final boolean[] required;
    private final boolean ci;
    private final int maxDepth;
    private final Map<String, Integer> exact = new HashMap<>();
    private final Map<String, Integer> folded = new HashMap<>();

    StructReader(
        String[] names,
        String[] foldedNames,
        boolean[] required,
        Reader[] readers,
        boolean ci,
        int maxDepth) {
      this.readers = readers;
      this.required = required;
      this.ci = ci;
      this.maxDepth = maxDepth;
      for (int i = 0; i < names.length; i++) {
        exact.put(names[i], i);
        // -1: several fields share the folded name; a key matching it is declined.
        folded.merge(foldedNames[i], i, (a, b) -> -1);
      }
    }

    @Override
    public Object read(JsonParser p, JsonToken token, int depth) throws IOException {
      if (token != JsonToken.START_OBJECT || depth > maxDepth) {
        throw Decline.INSTANCE;
      }
      int n = readers.length;
      Object[] values = new Object[n];
      boolean[] seen = new boolean[n];
      Object[] candidates = null;
      int[] candidateCounts = null;
      JsonToken t;
      while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
        String key = p.currentName();
        JsonToken valueToken = p.nextToken();
        Integer index = exact.get(key);
        if (index != null) {
          seen[index] = true;
          values[index] = value(index, p, valueToken, depth);
          continue;
        }
        Integer target = ci ? folded.get(asciiLower(key)) : null;
        if (target == null) {
          skip(p, valueToken, depth + 1, maxDepth);
          continue;
        }
        if (target < 0) {
          throw Decline.INSTANCE;
        }
        if (candidates == null) {
          candidates = new Object[n];
          candidateCounts = new int[n];
        }
        candidateCounts[target]++;
        candidates[target] = value(target, p, valueToken, depth);
      }
      if (t != JsonToken.END_OBJECT) {
        throw Decline.INSTANCE;
      }
      for (int i = 0; i < n; i++) {
        if (!seen[i] && candidateCounts != null && candidateCounts[i] > 0) {
          if (candidateCounts[i] > 1) {
            throw Decline.INSTANCE; // ambiguous: several keys match the field
          }
          values[i] = candidates[i];
        }
        if (values[i] == null && required[i]) {
          throw Decline.INSTANCE;
        }
      }
      return RowFactory.create(values);
    }

    private Object value(int index, JsonParser p, JsonToken token, int depth) throws IOException {
      return token == JsonToken.VALUE_NULL ? null : readers[index].read(p, token, depth + 1);
    }
  }

  /**
   * The key lower-cased as Python's str.lower() would, for ASCII keys; a non-ASCII key cannot
   * be folded here the way Python folds it, so it declines (when case-insensitive matching
   * could need it).
   */
  static String asciiLower(String key) {
    char[] out = null;
    for (int i = 0; i < key.length(); i++) {
      char c = key.charAt(i);
      if (c >= 0x80) {
        throw Decline.INSTANCE;
      }
      if (c >= 'A' && c <= 'Z') {
        if (out == null) {
          out = key.toCharArray();
        }
        out[i] = (char) (c + ('a' - 'A'));
      }
    }
    return out == null ? key : new String(out);
  }

  static final class ListReader implements Reader {
    private final Reader element;
    private final boolean required;
    private final int maxDepth;

    ListReader(Reader element, boolean required, int maxDepth) {
      this.element = element;
      this.required = required;
      this.maxDepth = maxDepth;
    }

    @Override
    public Object read(JsonParser p, JsonToken token, int depth) throws IOException {
      if (token != JsonToken.START_ARRAY || depth > maxDepth) {
        throw Decline.INSTANCE;
      }
      List<Object> out = new ArrayList<>();
      JsonToken t;
      while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
        if (t == JsonToken.VALUE_NULL) {
          if (required) {
            throw Decline.INSTANCE;
          }
          out.add(null);
        } else {
          out.add(element.read(p, t, depth + 1));
        }
      }
      return out;
    }
  }

  static final class MapReader implements Reader {
    private final Reader value;
    private final boolean required;
    private final int maxDepth;

    MapReader(Reader value, boolean required, int maxDepth) {
      this.value = value;
      this.required = required;
      this.maxDepth = maxDepth;
    }

    @Override
    public Object read(JsonParser p, JsonToken token, int depth) throws IOException {
      if (token != JsonToken.START_OBJECT || depth > maxDepth) {
        throw Decline.INSTANCE;
      }
      Map<String, Object> out = new LinkedHashMap<>();
      JsonToken t;
      while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
        String key = p.currentName();
        if (!wellFormed(key)) {
          throw Decline.INSTANCE;
        }
        JsonToken v = p.nextToken();
        if (v == JsonToken.VALUE_NULL) {
          if (required) {
            throw Decline.INSTANCE;
          }
          out.put(key, null);
        } else {
          out.put(key, value.read(p, v, depth + 1));
        }
      }
      if (t != JsonToken.END_OBJECT) {
        throw Decline.INSTANCE;
      }
      return out;
    }
  }

  /** Walks past a value nobody reads, so its depth is checked and its keys too (duplicates). */
  static void skip(JsonParser p, JsonToken token, int depth, int maxDepth) throws IOException {
    if (token != JsonToken.START_OBJECT && token != JsonToken.START_ARRAY) {
      return;
    }
    int level = depth;
    if (level > maxDepth) {
      throw Decline.INSTANCE;
    }
    while (level >= depth) {
      JsonToken t = p.nextToken();
      if (t == null) {
        throw Decline.INSTANCE;
      }
      if (t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) {
        if (++level > maxDepth) {
          throw Decline.INSTANCE;
        }
      } else if (t == JsonToken.END_OBJECT || t == JsonToken.END_ARRAY) {
        level--;
      }
    }
  }

  // -- scalars -------------------------------------------------------------------------------

  static Object bool(JsonParser p, JsonToken token, int depth) {
    if (token == JsonToken.VALUE_TRUE) {
      return Boolean.TRUE;
    }
    if (token == JsonToken.VALUE_FALSE) {
      return Boolean.FALSE;
    }
    throw Decline.INSTANCE;
  }

  static Object integer(JsonParser p, JsonToken token, int depth) throws IOException {
    if (token != JsonToken.VALUE_NUMBER_INT
        || p.getNumberType() != JsonParser.NumberType.INT) {
      throw Decline.INSTANCE;
    }
    return p.getIntValue();
  }

  static Object bigint(JsonParser p, JsonToken token, int depth) throws IOException {
    if (token != JsonToken.VALUE_NUMBER_INT) {
      throw Decline.INSTANCE;
    }
    JsonParser.NumberType type = p.getNumberType();
    if (type != JsonParser.NumberType.INT && type != JsonParser.NumberType.LONG) {
      throw Decline.INSTANCE;
    }
    return p.getLongValue();
  }

  static Object real(JsonParser p, JsonToken token, int depth) throws IOException {
    return checkedDouble(p, token);
  }

  /**
   * The double nearest to the JSON number, as Python's float() of the exact value gives it.
   * Integers convert from their exact value (so -0 is 0.0, as in Python); other literals
   * through the JDK's correctly rounded parser. Results near or below the smallest normal
   * double are declined rather than trusted.
   */
  static double checkedDouble(JsonParser p, JsonToken token) throws IOException {
    double d;
    if (token == JsonToken.VALUE_NUMBER_INT) {
      JsonParser.NumberType type = p.getNumberType();
      if (type == JsonParser.NumberType.BIG_INTEGER) {
        d = p.getBigIntegerValue().doubleValue();
      } else {
        d = (double) p.getLongValue();
      }
    } else if (token == JsonToken.VALUE_NUMBER_FLOAT) {
      String text = p.getText();
      d = Double.parseDouble(text);
      if (Math.abs(d) < Double.MIN_NORMAL && hasNonZeroDigit(text)) {
        throw Decline.INSTANCE;
      }
    } else {
      throw Decline.INSTANCE;
    }
    if (Double.isInfinite(d) || Double.isNaN(d)) {
      throw Decline.INSTANCE;
    }
    return d;
  }

  static float checkedFloat(JsonParser p, JsonToken token) throws IOException {
    double d = checkedDouble(p, token);
    float f = (float) d;
    if (Float.isInfinite(f)) {
      throw Decline.INSTANCE;
    }
    return f;
  }

  private static boolean hasNonZeroDigit(String literal) {
    for (int i = 0; i < literal.length(); i++) {
      char c = literal.charAt(i);
      if (c == 'e' || c == 'E') {
        return false;
      }
      if (c >= '1' && c <= '9') {
        return true;
      }
    }
    return false;
  }

  static Object string(JsonParser p, JsonToken token, int depth) throws IOException {
    return text(p, token);
  }

  static String text(JsonParser p, JsonToken token) throws IOException {
    if (token != JsonToken.VALUE_STRING) {
      throw Decline.INSTANCE;
    }
    String s = p.getText();
    if (!wellFormed(s)) {
      throw Decline.INSTANCE;
    }
    return s;
  }

  /** No lone surrogates (JSON escapes can write them; no writer can encode them). */
  static boolean wellFormed(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
          i++;
        } else {
          return false;
        }
      } else if (Character.isLowSurrogate(c)) {
        return false;
      }
    }
    return true;
  }

  static final class DecimalReader implements Reader {
    private static final Pattern NUMBER =
        Pattern.compile("-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?");
    private final int precision;
    private final int scale;

    DecimalReader(int precision, int scale) {
      this.precision = precision;
      this.scale = scale;
    }

    @Override
    public Object read(JsonParser p, JsonToken token, int depth) throws IOException {
      String literal;
      if (token == JsonToken.VALUE_NUMBER_INT || token == JsonToken.VALUE_NUMBER_FLOAT) {
        literal = p.getText();
      } else if (token == JsonToken.VALUE_STRING) {
        literal = p.getText();
        if (!NUMBER.matcher(literal).matches()) {
          throw Decline.INSTANCE;
        }
      } else {
        throw Decline.INSTANCE;
      }
      BigDecimal exact = new BigDecimal(literal).stripTrailingZeros();
      if (exact.scale() > scale) {
        throw Decline.INSTANCE; // digits beyond the scale
      }
      if (exact.signum() != 0 && exact.precision() - exact.scale() > precision - scale) {
        throw Decline.INSTANCE; // too many digits before the point
      }
      return exact.setScale(scale);
    }
  }

  static final class Base64Reader implements Reader {
    private static final Pattern CANONICAL =
        Pattern.compile(
            "(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?");
    private final int length;

    /** @param length the fixed length in bytes, or -1 for binary */
    Base64Reader(int length) {
      this.length = length;
    }

    @Override
    public Object read(JsonParser p, JsonToken token, int depth) throws IOException {
      String s = text(p, token);
      if (!CANONICAL.matcher(s).matches()) {
        throw Decline.INSTANCE;
      }
      byte[] out = Base64.getDecoder().decode(s);
      if (length >= 0 && out.length != length) {
        throw Decline.INSTANCE;
      }
      return out;
    }
  }

  static Object date(JsonParser p, JsonToken token, int depth) throws IOException {
    String s = text(p, token);
    if (s.length() != 10) {
      throw Decline.INSTANCE;
    }
    return day(s);
  }

  static Object timestamp(JsonParser p, JsonToken token, int depth) throws IOException {
    String s = text(p, token);
    long[] parts = dateTime(s);
    if (parts[2] != s.length()) {
      throw Decline.INSTANCE; // anything after the time: a zone, or not the grammar
    }
    return LocalDateTime.ofEpochSecond(parts[0], (int) parts[1] * 1000, ZoneOffset.UTC);
  }

  private static final long FIRST_SECOND = -62135596800L; // 0001-01-01T00:00:00Z
  private static final long END_SECOND = 253402300800L; // 10000-01-01T00:00:00Z

  static Object timestamptz(JsonParser p, JsonToken token, int depth) throws IOException {
    String s = text(p, token);
    long[] parts = dateTime(s);
    int at = (int) parts[2];
    int offsetSeconds;
    if (at + 1 == s.length() && s.charAt(at) == 'Z') {
      offsetSeconds = 0;
    } else if (at + 6 == s.length() && s.charAt(at + 3) == ':') {
      char sign = s.charAt(at);
      int hours = digits(s, at + 1, 2);
      int minutes = digits(s, at + 4, 2);
      if ((sign != '+' && sign != '-') || hours < 0 || hours > 23 || minutes < 0 || minutes > 59) {
        throw Decline.INSTANCE;
      }
      offsetSeconds = (sign == '-' ? -1 : 1) * (hours * 3600 + minutes * 60);
    } else {
      throw Decline.INSTANCE;
    }
    long epochSecond = parts[0] - offsetSeconds;
    if (epochSecond < FIRST_SECOND || epochSecond >= END_SECOND) {
      throw Decline.INSTANCE; // Python's datetime cannot hold it in UTC
    }
    return Instant.ofEpochSecond(epochSecond, parts[1] * 1000);
  }

  /** YYYY-MM-DD at the start of {@code s}: a valid date from year 1 on. */
  private static LocalDate day(String s) {
    int year = digits(s, 0, 4);
    int month = digits(s, 5, 2);
    int dom = digits(s, 8, 2);
    if (year < 1 || month < 0 || dom < 0 || s.charAt(4) != '-' || s.charAt(7) != '-') {
      throw Decline.INSTANCE;
    }
    try {
      return LocalDate.of(year, month, dom);
    } catch (DateTimeException e) {
      throw Decline.INSTANCE;
    }
  }

  /**
   * YYYY-MM-DDTHH:MM:SS[.f{1,6}] at the start of {@code s}, valid: {epoch second as if UTC,
   * microseconds, index after it}.
   */
  private static long[] dateTime(String s) {
    if (s.length() < 19 || s.charAt(10) != 'T' || s.charAt(13) != ':' || s.charAt(16) != ':') {
      throw Decline.INSTANCE;
    }
    LocalDate date = day(s);
    int hour = digits(s, 11, 2);
    int minute = digits(s, 14, 2);
    int second = digits(s, 17, 2);
    if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) {
      throw Decline.INSTANCE;
    }
    int at = 19;
    int micros = 0;
    if (at < s.length() && s.charAt(at) == '.') {
      int end = at + 1;
      while (end < s.length() && s.charAt(end) >= '0' && s.charAt(end) <= '9') {
        end++;
      }
      int count = end - at - 1;
      if (count < 1 || count > 6) {
        throw Decline.INSTANCE; // more than microseconds is rejected, never truncated
      }
      micros = digits(s, at + 1, count);
      for (int k = count; k < 6; k++) {
        micros *= 10;
      }
      at = end;
    }
    long epochSecond = date.toEpochDay() * 86400L + hour * 3600L + minute * 60L + second;
    return new long[] {epochSecond, micros, at};
  }

  /** The value of {@code count} ASCII digits at {@code from}, or -1. */
  private static int digits(String s, int from, int count) {
    if (from + count > s.length()) {
      return -1;
    }
    int value = 0;
    for (int i = from; i < from + count; i++) {
      char c = s.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      value = value * 10 + (c - '0');
    }
    return value;
  }

  private static final Pattern UUID_RE =
      Pattern.compile(
          "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");

  static Object uuid(JsonParser p, JsonToken token, int depth) throws IOException {
    String s = text(p, token);
    if (!UUID_RE.matcher(s).matches()) {
      throw Decline.INSTANCE;
    }
    return s.toLowerCase(java.util.Locale.ROOT);
  }
}
