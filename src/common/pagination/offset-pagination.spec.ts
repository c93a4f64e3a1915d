import { offsetOf, offsetPage } from './offset-pagination';

describe('offset pagination', () => {
  it('computes skip and take from page and size', () => {
    expect(offsetOf({ page: 1, size: 20 })).toEqual({ skip: 0, take: 20 });
    expect(offsetOf({ page: 3, size: 7 })).toEqual({ skip: 14, take: 7 });
  });

  it('builds the envelope, rounding total pages up', () => {
    expect(offsetPage(['a'], 21, { page: 2, size: 20 }).pagination).toEqual({
      total_items: 21,
      page_number: 2,
      page_size: 20,
      total_pages: 2,
    });
  });

  it('reports zero pages for an empty list and keeps data past the end empty', () => {
    expect(offsetPage([], 0, { page: 5, size: 10 })).toEqual({
      pagination: { total_items: 0, page_number: 5, page_size: 10, total_pages: 0 },
      data: [],
    });
  });
});
