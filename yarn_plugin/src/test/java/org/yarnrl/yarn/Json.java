package org.yarnrl.yarn;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

/** JSON output of test and benchmark results (Jackson, from Hadoop's own class path). */
final class Json {
  private static final ObjectMapper MAPPER = new ObjectMapper().enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);

  private Json() {}

  /** A JSON document (a command's `--json` output line) as a tree. */
  static com.fasterxml.jackson.databind.JsonNode read(String json) {
    try {
      return MAPPER.readTree(json);
    } catch (Exception e) {
      throw new IllegalArgumentException("not JSON: " + json, e);
    }
  }

  static String write(Object value) {
    try {
      return MAPPER.writeValueAsString(value);
    } catch (Exception e) {
      throw new IllegalArgumentException("not serializable as JSON: " + value, e);
    }
  }
}
