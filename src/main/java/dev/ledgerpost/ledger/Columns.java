package dev.ledgerpost.ledger;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * The parameters of a batch statement that reads its rows with {@code unnest($1::uuid[], $2::int[], ...)}: one array
 * per column, element i of each being request i's value (or, for a column of the requests' items, item i of all).
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

  /** What a column of the requests' items reads: the request, the item's index in it, the item. */
  interface ItemValue<Q, I, T> {
    T of(Q request, int index, I item);
  }

  /**
   * The next column of the requests' items (a message's recipients...), request after request: {@code value} of
   * every item, in one array as long as all of them together.
   */
  <I, T> Columns<Q> addItems(Function<Q, List<I>> items, ItemValue<Q, I, T> value, IntFunction<T[]> array) {
    int total = 0;
    for (Q request : batch) {
      total += items.apply(request).size();
    }
    T[] column = array.apply(total);
    int k = 0;
    for (Q request : batch) {
      List<I> of = items.apply(request);
      for (int j = 0; j < of.size(); j++) {
        column[k++] = value.of(request, j, of.get(j));
      }
    }
    arrays.add(column);
    return this;
  }

  /** The next parameter is one value, the same for every request. */
  Columns<Q> addValue(Object value) {
    arrays.add(value);
    return this;
  }

  /** The parameters so far, in order (a list the caller may add further parameters to). */
  List<Object> arrays() {
    return arrays;
  }
}
