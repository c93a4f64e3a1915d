import type { OffsetPaginationQueryDto } from './offset-pagination.dto';

export interface OffsetPagination {
  total_items: number;
  page_number: number;
  page_size: number;
  total_pages: number;
}

export interface OffsetPage<T> {
  pagination: OffsetPagination;
  data: T[];
}

export function offsetOf(query: OffsetPaginationQueryDto): { skip: number; take: number } {
  return { skip: (query.page - 1) * query.size, take: query.size };
}

export function offsetPage<T>(data: T[], totalItems: number, query: OffsetPaginationQueryDto): OffsetPage<T> {
  return {
    pagination: {
      total_items: totalItems,
      page_number: query.page,
      page_size: query.size,
      total_pages: Math.ceil(totalItems / query.size),
    },
    data,
  };
}
