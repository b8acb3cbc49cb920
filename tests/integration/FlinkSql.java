// Runs a file of Flink SQL statements (separated by ";" at a line's end) in one JVM on Flink's
// local mini cluster: SET 'key' = 'value' as the SQL client does, DDL at once, every INSERT in
// one job, awaited. Single-file source, run as
// `java -cp <flink classpath> FlinkSql.java statements.sql` by tests/integration/test_flink.py.
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.StatementSet;
import org.apache.flink.table.api.TableEnvironment;

public class FlinkSql {
  private static final Pattern SET =
      Pattern.compile("SET\\s+'([^']+)'\\s*=\\s*'([^']*)'", Pattern.CASE_INSENSITIVE);

  public static void main(String[] args) throws Exception {
    TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
    env.getConfig().set("parallelism.default", "1");
    StatementSet inserts = env.createStatementSet();
    int insertCount = 0;
    for (String statement : Files.readString(Path.of(args[0])).split(";\\s*\\n")) {
      String sql = statement.strip();
      if (sql.isEmpty()) continue;
      Matcher set = SET.matcher(sql);
      if (set.matches()) {
        env.getConfig().getConfiguration().setString(set.group(1), set.group(2));
      } else if (sql.regionMatches(true, 0, "INSERT", 0, 6)) {
        inserts.addInsertSql(sql);
        insertCount++;
      } else {
        env.executeSql(sql);
      }
    }
    if (insertCount > 0) inserts.execute().await();
    System.out.println("ran " + insertCount + " inserts");
  }
}
