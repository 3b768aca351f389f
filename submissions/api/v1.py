"""`/api/v1/submissions/`: token-authenticated upload and status for the CLI."""

from __future__ import annotations

from django.http import Http404
from rest_framework import permissions, serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from registry_site.catalogue.api.errors import error_response

from registry_site.limits import upload_refusal
from submissions.intake import UploadRefused, receive_upload
from submissions.models import Submission


class EventSerializer(serializers.Serializer):
    from_state = serializers.CharField()
    to_state = serializers.CharField()
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()


class SubmissionSerializer(serializers.ModelSerializer):
    error_codes = serializers.SerializerMethodField()
    events = EventSerializer(many=True, read_only=True)

    class Meta:
        model = Submission
        fields = ["id", "state", "archive_name", "archive_sha256", "archive_size", "provenance",
                  "created_at", "updated_at", "decision_reason", "error_codes", "validation_report", "events"]

    def get_error_codes(self, obj):
        return obj.error_codes()


class SubmissionList(APIView):
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [MultiPartParser]

    def get(self, request):
        submissions = Submission.objects.owned_by(request.user).defer("archive")[:100]
        return Response(SubmissionSerializer(submissions, many=True).data)

    def post(self, request):
        uploaded = request.FILES.get("archive")
        if upload_refusal(request):
            return error_response(upload_refusal(request), 413)
        if uploaded is None:
            return error_response("send the bundle archive as multipart field 'archive'", 400)
        try:
            submission = receive_upload(request.user, uploaded.name, uploaded.read())
        except UploadRefused as refused:
            existing = {} if refused.existing is None else {"submission": SubmissionSerializer(refused.existing).data}
            return error_response(refused.message, refused.status, **existing)
        return Response(SubmissionSerializer(submission).data, status=status.HTTP_201_CREATED)


class SubmissionDetail(APIView):
    permission_classes = [permissions.IsAuthenticated]

    def get(self, request, pk):
        submission = Submission.objects.visible_to(request.user).defer("archive").filter(pk=pk).first()
        if submission is None:
            raise Http404
        return Response(SubmissionSerializer(submission).data)
