package dev.sandboxsdk.samples;

import dev.sandboxsdk.CodeContext;
import dev.sandboxsdk.CodeContextOptions;
import dev.sandboxsdk.CodeLanguage;
import dev.sandboxsdk.CodeOutput;
import dev.sandboxsdk.CodeResult;
import dev.sandboxsdk.local.LocalSandbox;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A small data-analysis session in a Python code context: load a CSV the application wrote into
 * the sandbox, look at it, fix a mistake the way one fixes the next notebook cell, and end with a
 * chart that comes back as PNG without the code saving it.
 *
 * <p>Run with no arguments; the chart is written to {@code sales-chart.png} in the working
 * directory (or to the path given as the first argument). The chart needs matplotlib in the
 * sandbox's Python ({@code apt-get install python3-matplotlib}); without it the session says so
 * and ends after the numbers.
 */
public final class DataAnalysis {
  private DataAnalysis() {}

  static final String CSV = "month,region,amount\n"
      + "Jan,north,120.0\nJan,south,80.5\nFeb,north,95.5\nFeb,south,101.0\nMar,north,143.25\nMar,south,99.75\n";

  public static void main(String[] args) throws Exception {
    Path chartFile = Path.of(args.length > 0 ? args[0] : "sales-chart.png");
    try (LocalSandbox sandbox = LocalSandbox.start();
         CodeContext py = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON))) {
      sandbox.files().writeString("sales.csv", CSV);
      say("context %s (%s)", py.id(), py.language().wireName());

      py.run("import csv\nrows = list(csv.DictReader(open('sales.csv')))\nprint(len(rows), 'rows loaded')")
          .stdout().lines().forEach(l -> say("cell 1: %s", l));

      // A mistake, as data: the context keeps what the first cell loaded.
      CodeResult wrong = py.run("total = sum(r['amount'] for r in rows)");
      say("cell 2 failed: %s: %s", wrong.error().name(), wrong.error().message());

      CodeResult total = py.run("total = sum(float(r['amount']) for r in rows)\ntotal");
      say("cell 3: total = %s", total.value().map(CodeOutput::text).orElse("?"));

      CodeResult byMonth = py.run("""
          by_month = {}
          for r in rows:
              by_month[r['month']] = by_month.get(r['month'], 0) + float(r['amount'])
          by_month
          """);
      say("cell 4: by month = %s", byMonth.value().map(CodeOutput::text).orElse("?"));

      CodeResult chart = py.run("""
          import matplotlib.pyplot as plt
          plt.figure(figsize=(4, 3))
          plt.bar(list(by_month), list(by_month.values()))
          plt.title('Sales by month')
          None
          """);
      if (!chart.isSuccess()) {
        say("no chart: %s: %s", chart.error().name(), chart.error().message());
        return;
      }
      Optional<byte[]> png = chart.outputs().stream().flatMap(o -> o.png().stream()).findFirst();
      if (png.isPresent()) {
        Files.write(chartFile, png.get());
        say("chart: %d bytes of PNG written to %s", png.get().length, chartFile.toAbsolutePath());
      }
    }
  }

  private static void say(String format, Object... args) {
    System.out.println(String.format(format, args));
  }
}
