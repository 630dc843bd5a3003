package dev.ledgerpost.ledger;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * The parameters of a batch statement that reads its rows with {@code unnest($1::uuid[], $2::int[], ...)}: one array
 * per column, element i of each being request i's value.
 */
final class Columns<Q> {
  private final List<Q> batch;
  private final List<Object> arrays = new ArrayList<>();

  Columns(List<Q> batch) {
    this.batch = batch;
  }

  /** The next column: {@code value} of every request, in an array of the type the statement casts it to. */
  <T> Columns<Q> add(Function<Q, T> value, IntFunction<T[]> array) {
    T[] column = array.apply(batch.size());
    for (int i = 0; i < column.length; i++) {
      column[i] = value.apply(batch.get(i));
    }
    arrays.add(column);
    return this;
  }

  List<Object> arrays() {
    return arrays;
  }
}
